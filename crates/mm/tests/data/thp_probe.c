#include <stdio.h>
#include <sys/mman.h>
#include <fcntl.h>
int main(){
 void*a=mmap(0,4<<20,3,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); printf("anon4M %p\n",a);
 void*b=mmap(0,(4<<20)+4096,3,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); printf("anon4M+4k %p\n",b);
 void*c=mmap(0,4<<20,3,MAP_PRIVATE|MAP_ANONYMOUS|MAP_STACK,-1,0); printf("stack4M %p\n",c);
 void*d=mmap(0,4<<20,3,MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE,-1,0); printf("noreserve4M %p\n",d);
 void*e=mmap(0,4<<20,3,MAP_SHARED|MAP_ANONYMOUS,-1,0); printf("shared4M %p\n",e);
 int fd=open("/usr/lib/x86_64-linux-gnu/libc.so.6",O_RDONLY);
 void*f=mmap(0,(2<<20)+8192,1,MAP_PRIVATE,fd,0); printf("file2M+8k %p\n",f);
 void*g=mmap(0,(2<<20)+8192,1,MAP_PRIVATE,fd,4096); printf("file2M+8k@4k %p\n",g);
 return 0;}
