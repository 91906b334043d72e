# shellcheck shell=bash
# The patch series: patches/series lists git format-patch files, applied in
# order with git am on top of the base commit. Backports of mainline commits
# live in patches/backport and come first; this project's own work lives in
# patches/pending (see series_format).

KDEV_PATCHES=$KDEV_ROOT/patches

# series_patches: the patch files in series order, one path per line.
series_patches()
{
	local name

	[ -f "$KDEV_PATCHES/series" ] || return 0
	while read -r name; do
		case "$name" in ''|'#'*) continue ;; esac
		[ -f "$KDEV_PATCHES/$name" ] ||
			die "patches/series names $name, which does not exist"
		printf '%s\n' "$KDEV_PATCHES/$name"
	done < "$KDEV_PATCHES/series"
}

# series_stamp: changes whenever the base or any patch changes.
series_stamp()
{
	{
		base_version
		series_patches | while read -r p; do sha256sum < "$p"; done
	} | sha256sum | cut -d' ' -f1
}

# series_apply TREE [COUNT]: reset TREE to the base and git am the first COUNT
# patches (all by default). A patch that does not apply stops everything and
# is named.
series_apply()
{
	local tree=$1 count=${2:-} n=0 patch

	kgit "$tree" am --abort >/dev/null 2>&1 || true
	kgit "$tree" checkout -q --detach "$KDEV_BASE_TAG"
	kgit "$tree" reset -q --hard "$KDEV_BASE_TAG"
	kgit "$tree" clean -q -fdx
	while read -r patch; do
		[ -n "$patch" ] || continue
		n=$((n + 1))
		if [ -n "$count" ] && [ "$n" -gt "$count" ]; then
			break
		fi
		if ! kgit "$tree" am -q --committer-date-is-author-date \
				"$patch" >&2; then
			kgit "$tree" am --abort >/dev/null 2>&1 || true
			die "patch ${patch#"$KDEV_ROOT"/} does not apply to the base plus the patches before it"
		fi
	done < <(series_patches)
}

# apply_tree_lock: hold the apply tree until this kdev command exits. The
# series check walks the tree for its whole run, and a test run re-applies
# patches/ there when they changed: without the lock, either could reset
# the tree under the other.
apply_tree_lock()
{
	local fd

	mkdir -p "$KDEV_CACHE"
	exec {fd}> "$KDEV_CACHE/apply-tree.lock"
	if ! flock -n "$fd"; then
		log "waiting for another kdev command to finish with $KDEV_APPLY_TREE"
		flock "$fd"
	fi
}

# series_build_tree: the tree the tests build, base + patches/. The series is
# applied in the apply tree and the build tree then checks out the result,
# which rewrites only the files that differ: everything else keeps its
# mtime, so the kernel build stays incremental when one patch changes.
series_build_tree()
{
	local stamp state=$KDEV_CACHE/state/build-tree.stamp

	base_import
	base_worktree "$KDEV_BUILD_TREE"
	stamp=$(series_stamp)
	if [ -f "$state" ] && [ "$(cat "$state")" = "$stamp" ] &&
	   [ -z "$(git -C "$KDEV_BUILD_TREE" status --porcelain --untracked-files=no)" ]; then
		return 0
	fi
	log "applying $(series_patches | wc -l) patches"
	rm -f "$state"
	apply_tree_lock
	base_worktree "$KDEV_APPLY_TREE"
	series_apply "$KDEV_APPLY_TREE"
	kgit "$KDEV_BUILD_TREE" checkout -q -f --detach \
		"$(git -C "$KDEV_APPLY_TREE" rev-parse HEAD)"
	mkdir -p "$(dirname "$state")"
	printf '%s\n' "$stamp" > "$state"
}

# series_dev_tree [--force]: the developers' tree, on branch $KDEV_DEV_BRANCH
# = base + patches/. Refuses to throw away commits or edits not yet exported.
series_dev_tree()
{
	local force=${1:-}

	base_import
	if [ -e "$KDEV_DEV_TREE/.git" ] && [ "$force" != --force ]; then
		if [ -n "$(git -C "$KDEV_DEV_TREE" status --porcelain)" ]; then
			die "$KDEV_DEV_TREE has uncommitted changes; commit and export them, or use --force"
		fi
		if ! series_exported_is_current; then
			die "$KDEV_DEV_TREE has commits that are not in patches/; run 'kdev export' first, or use --force"
		fi
	fi
	if [ ! -e "$KDEV_DEV_TREE/.git" ]; then
		git --git-dir="$KDEV_REPO" worktree prune
		git --git-dir="$KDEV_REPO" worktree add -q -B "$KDEV_DEV_BRANCH" \
			"$KDEV_DEV_TREE" "$KDEV_BASE_TAG"
	fi
	kgit "$KDEV_DEV_TREE" checkout -q -B "$KDEV_DEV_BRANCH" "$KDEV_BASE_TAG"
	series_apply "$KDEV_DEV_TREE"
	kgit "$KDEV_DEV_TREE" checkout -q -B "$KDEV_DEV_BRANCH"
	# Commits made there carry the project's identity, whatever the
	# machine's git configuration says (checkpatch wants the author's
	# Signed-off-by)
	git --git-dir="$KDEV_REPO" config user.name "$KDEV_IDENT_NAME"
	git --git-dir="$KDEV_REPO" config user.email "$KDEV_IDENT_EMAIL"
	log "developer tree ready: $KDEV_DEV_TREE (branch $KDEV_DEV_BRANCH, $(series_patches | wc -l) patches on $KDEV_BASE_TAG)"
}

# series_format DIR: the dev tree's commits as git format-patch files,
# sorted as stable trees and OpenWrt's backport/pending directories do:
# DIR/backport holds the commits that name the mainline commit they stand
# for ("[ Upstream commit <sha> ]" or "[ Upstream commits ... ]"),
# DIR/pending this project's own work. DIR/series lists them in order as
# backport/NAME or pending/NAME. Hashes in the index lines are abbreviated
# to a fixed 12 digits: git's default length grows with the number of
# objects in the repository, which differs between machines.
series_format()
{
	local dir=$1 p sub seen_pending=

	git -C "$KDEV_DEV_TREE" -c core.abbrev=12 format-patch -q -N \
		--zero-commit --no-signature --no-thread --no-cover-letter \
		-o "$dir" "$KDEV_BASE_TAG..$KDEV_DEV_BRANCH" >/dev/null
	mkdir -p "$dir/backport" "$dir/pending"
	: > "$dir/series"
	for p in "$dir"/*.patch; do
		[ -e "$p" ] || continue
		if grep -q '^\[ Upstream commits\? [0-9a-f]\{12\}' "$p"; then
			sub=backport
			[ -z "$seen_pending" ] ||
				warn "${p##*/} is a backport after the series' own work; backports come first"
		else
			sub=pending
			seen_pending=1
		fi
		mv "$p" "$dir/$sub/"
		echo "$sub/${p##*/}" >> "$dir/series"
	done
}

# series_exported_is_current: patches/ equals what the dev tree would export.
series_exported_is_current()
{
	local tmp name rc=0

	tmp=$(mktemp -d)
	series_format "$tmp"
	diff -q "$tmp/series" <(series_names) >/dev/null || rc=1
	if [ "$rc" = 0 ]; then
		while read -r name; do
			cmp -s "$tmp/$name" "$KDEV_PATCHES/$name" || { rc=1; break; }
		done < "$tmp/series"
	fi
	rm -rf "$tmp"
	return "$rc"
}

# series_names: the names listed in patches/series, as listed
# (backport/NAME or pending/NAME).
series_names()
{
	series_patches | while read -r p; do echo "${p#"$KDEV_PATCHES"/}"; done
}

# series_warn_ignored: Debian's top-level .gitignore ignores every new file
# ("/*"), so "git add" skips new files silently; name any left behind.
series_warn_ignored()
{
	local f

	git -C "$KDEV_DEV_TREE" status --porcelain --ignored=matching \
		--untracked-files=all |
		sed -n 's/^!! //p' | grep -v -e '__pycache__/' -e '\.py[co]$' -e '\.[oad]$' -e '^tools/net/ynl/generated/' |
		while read -r f; do
			warn "$f is ignored by Debian's .gitignore and in no commit (git add -f it)"
		done || true
}

# series_export: replace patches/ with the dev tree's commits.
series_export()
{
	local tmp sub

	[ -e "$KDEV_DEV_TREE/.git" ] || die "no developer tree; run 'kdev tree' first"
	[ "$(git -C "$KDEV_DEV_TREE" rev-parse --abbrev-ref HEAD)" = "$KDEV_DEV_BRANCH" ] ||
		die "$KDEV_DEV_TREE is not on branch $KDEV_DEV_BRANCH"
	[ -z "$(git -C "$KDEV_DEV_TREE" status --porcelain --untracked-files=no)" ] ||
		die "$KDEV_DEV_TREE has uncommitted changes; commit them first"

	series_warn_ignored
	tmp=$(mktemp -d)
	series_format "$tmp"
	find "$KDEV_PATCHES" -name '*.patch' -delete
	for sub in backport pending; do
		mkdir -p "$KDEV_PATCHES/$sub"
		find "$tmp/$sub" -maxdepth 1 -name '*.patch' \
			-exec mv -t "$KDEV_PATCHES/$sub" {} +
	done
	mv "$tmp/series" "$KDEV_PATCHES/series"
	rm -rf "$tmp"
	log "exported $(wc -l < "$KDEV_PATCHES/series") patches to patches/"
}
