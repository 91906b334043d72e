# shellcheck shell=bash
# The series check: every patch applies on the ones before it, the kernel
# builds after each patch (the series is bisectable), and checkpatch --strict
# has nothing to say about any patch.
#
# It walks the tooling's own build tree, leaving it at the full series, and
# builds the non-debug "bench" flavour (the same fragments without the debug
# options, so about twice as fast to compile). A patch that only touches
# Documentation/ or tools/ cannot change the kernel build and is not built.

# checkpatch_head TREE: checkpatch --strict on the tree's HEAD commit. Files
# written by the YNL code generator (marked "YNL-GEN") are left out: they
# must not be edited by hand, and check_generated covers them instead.
checkpatch_head()
{
	local tree=$1 f excludes=()

	while read -r f; do
		if [ -f "$tree/$f" ] && grep -q '^/\* YNL-GEN' "$tree/$f"; then
			excludes+=(":(exclude)$f")
		fi
	done < <(git -C "$tree" diff --name-only HEAD~1 HEAD)
	# stderr: spdxcheck.py cannot use a worktree of a bare repository
	# and says so on every new file; the licence tags are still parsed.
	git -C "$tree" format-patch -1 --stdout HEAD -- . "${excludes[@]}" |
		(cd "$tree" && scripts/checkpatch.pl --strict -q --no-summary - \
			2>>"$KDEV_CACHE/checkpatch.stderr")
}

# check_generated TREE: the generated netlink code matches its YNL specs.
check_generated()
{
	local tree=$1

	(cd "$tree" && PATH=/usr/bin:$PATH tools/net/ynl/ynl-regen.sh -f) >/dev/null
	if [ -n "$(git -C "$tree" status --porcelain --untracked-files=no)" ]; then
		git -C "$tree" status --short --untracked-files=no >&2
		kgit "$tree" checkout -q -- .
		die "generated netlink code differs from what tools/net/ynl/ynl-regen.sh makes of the specs"
	fi
}

# touches_kernel TREE: HEAD changes a file the kernel build uses.
touches_kernel()
{
	git -C "$1" diff --name-only HEAD~1 HEAD |
		grep -qv -e '^Documentation/' -e '^tools/'
}

check_series()
{
	local patch n=0 bad=0 total start=$SECONDS
	local state=$KDEV_CACHE/state/build-tree.stamp

	base_import
	base_worktree "$KDEV_BUILD_TREE"
	total=$(series_patches | wc -l)
	rm -f "$state"
	series_apply "$KDEV_BUILD_TREE" 0

	while read -r patch; do
		[ -n "$patch" ] || continue
		n=$((n + 1))
		log "[$n/$total] $(basename "$patch")"
		kgit "$KDEV_BUILD_TREE" am -q --committer-date-is-author-date "$patch" >&2 ||
			{ kgit "$KDEV_BUILD_TREE" am --abort >/dev/null 2>&1 || true;
			  die "$(basename "$patch") does not apply"; }
		if ! checkpatch_head "$KDEV_BUILD_TREE" >&2; then
			warn "checkpatch --strict complains about $(basename "$patch")"
			bad=1
		fi
		if touches_kernel "$KDEV_BUILD_TREE"; then
			build_kernel "$KDEV_BUILD_TREE" bench >/dev/null
		else
			log "only Documentation/ and tools/: no kernel build needed"
		fi
	done < <(series_patches)

	check_generated "$KDEV_BUILD_TREE"
	mkdir -p "$(dirname "$state")"
	series_stamp > "$state"
	[ "$bad" = 0 ] || die "series check failed: checkpatch"
	log "series check passed: $total patches apply, build and are checkpatch clean ($((SECONDS - start)) s)"
}
