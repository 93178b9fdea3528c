#!/usr/bin/env bash
# apply.sh: check out a source tree with a patch series applied.
#
# Usage: apply.sh NAME [SERIES_DIR|none] [EXTRA.patch...]
#   NAME        tree name: $ASPACE_KCACHE/trees/NAME (e.g. unpatched, patched)
#   SERIES_DIR  directory with a `series` file and the patches it lists, in
#               order (default $ASPACE_PATCHES); `none` for the pristine tree
#   EXTRA       further patches applied after the series (the mutant check)
#
# The commits are built on a scratch index (git apply --cached), then the
# tree is checked out at them: only the files that differ from what the tree
# held before are rewritten, so an unchanged series rebuilds nothing and a
# changed patch rebuilds only what depends on the files it touches.
. "$(dirname "$0")/lib.sh"

name=${1:?usage: apply.sh NAME [SERIES_DIR|none] [EXTRA.patch...]}
series_dir=${2:-$ASPACE_PATCHES}
shift $(($# < 2 ? $# : 2))

git -C "$KGIT" rev-parse -q --verify pristine >/dev/null ||
	die "no pristine source in $KGIT: run fetch.sh"

patches=()
if [ "$series_dir" != none ]; then
	[ -f "$series_dir/series" ] || die "no series file in $series_dir"
	series_dir=$(cd "$series_dir" && pwd) # git apply runs in another directory
	while read -r p _; do
		case $p in '' | '#'*) continue ;; esac
		[ -f "$series_dir/$p" ] || die "$series_dir/series lists $p, which is missing"
		patches+=("$series_dir/$p")
	done <"$series_dir/series"
fi
for p in "$@"; do
	[ -f "$p" ] || die "no patch $p"
	patches+=("$(cd "$(dirname "$p")" && pwd)/$(basename "$p")")
done

tree=$KTREES/$name
mkdir -p "$KTREES"
git -C "$KGIT" worktree prune
if [ ! -e "$tree/.git" ]; then
	log "checking out pristine $KVERSION into $tree"
	rm -rf "$tree"
	git -C "$KGIT" worktree add -q --detach "$tree" pristine
fi

idx=$(mktemp "$ASPACE_KCACHE/index.XXXXXX")
msg=$(mktemp "$ASPACE_KCACHE/msg.XXXXXX")
trap 'rm -f "$idx" "$msg" "$msg.patch" "$msg.info"' EXIT
export GIT_INDEX_FILE=$idx
git -C "$KGIT" read-tree pristine
head=$(git -C "$KGIT" rev-parse pristine)
for p in ${patches[@]+"${patches[@]}"}; do
	if ! git -C "$KGIT" apply --cached "$p" 2>"$msg"; then
		cat "$msg" >&2
		die "$(basename "$p") does not apply (after ${prev:-the pristine tree})"
	fi
	git mailinfo "$msg" "$msg.patch" <"$p" >"$msg.info"
	subject=$(sed -n 's/^Subject: //p' "$msg.info")
	author=$(sed -n 's/^Author: //p' "$msg.info")
	email=$(sed -n 's/^Email: //p' "$msg.info")
	head=$(printf '%s\n\n%s\n' "${subject:-$(basename "$p")}" "$(cat "$msg")" |
		GIT_AUTHOR_NAME=${author:-aspace} GIT_AUTHOR_EMAIL=${email:-aspace@localhost} \
		GIT_COMMITTER_NAME=aspace GIT_COMMITTER_EMAIL=aspace@localhost \
		GIT_AUTHOR_DATE=2025-01-01T00:00:00Z GIT_COMMITTER_DATE=2025-01-01T00:00:00Z \
		git -C "$KGIT" commit-tree "$(git -C "$KGIT" write-tree)" -p "$head")
	prev=$(basename "$p")
done
unset GIT_INDEX_FILE

if [ "$(git -C "$tree" rev-parse HEAD)" != "$head" ] ||
	[ -n "$(git -C "$tree" status --porcelain --untracked-files=no)" ]; then
	git -C "$tree" checkout -q -f --detach "$head"
fi
log "$name: ${#patches[@]} patch(es) on $KVERSION at $tree"
echo "$tree"
