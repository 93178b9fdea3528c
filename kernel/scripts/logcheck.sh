#!/usr/bin/env bash
# logcheck.sh: scan a guest console log for kernel reports. Prints each
# report's first line and exits 1 if there is one, 0 if the log is clean.
#
# Usage: logcheck.sh LOG
# A report is anything lockdep, KASAN, DEBUG_VM, the list checks, RCU or
# the oops/BUG/WARN machinery print. The lines the tests provoke on purpose
# (memory-failure's "Memory failure:" and "Injecting memory failure", and
# the page dumps that selftests/mm's gup_test asks for with its
# dump_pages() test, "page dumped because: gup_test: dump_pages() test")
# are not reports.
set -euo pipefail
log=${1:?usage: logcheck.sh LOG}
pattern='BUG:|WARNING:|Oops|Kernel panic|kernel BUG at|KASAN|UBSAN|general protection fault'
pattern+='|possible recursive locking|possible circular locking|inconsistent lock state'
pattern+='|lock held when returning|suspicious RCU usage|DEBUG_LOCKS_WARN_ON|INFO: lockdep'
pattern+='|bad unlock balance|held lock freed|lockdep is turned off|Bad page|Bad rss-counter'
pattern+='|list_add corruption|list_del corruption|VM_BUG_ON|page dumped because|Call Trace:'
pattern+='|rcu: INFO:|detected stalls|soft lockup|hard LOCKUP|blocked for more than'
pattern+='|Out of memory|invoked oom-killer'
# Collected first, then cut: `grep | head` under pipefail fails when head
# stops reading early (grep gets SIGPIPE), which once made a log with a
# flood of reports (1,694 WARNINGs) read as clean.
hits=$(grep -aE "$pattern" "$log" | grep -av 'page dumped because: gup_test: dump_pages() test') || true
[ -n "$hits" ] || exit 0
printf '%s\n' "$hits" | sed -n '1,20p'
exit 1
