# shellcheck shell=bash
# The series check: every patch applies on the ones before it, the kernel
# builds after each patch (the series is bisectable), and checkpatch --strict
# has nothing to say about any patch.
#
# It walks the apply tree (the build tree the tests use is left alone) and
# builds the non-debug "bench" flavour (the same fragments without the debug
# options, so about twice as fast to compile) in its own directory, "check".
# A patch that only touches Documentation/ or tools/ cannot change the
# kernel build and is not built.

# checkpatch_exceptions PATCH: the checkpatch message types that
# tooling/checkpatch-exceptions lets PATCH (a file name in patches/) have,
# comma-separated; empty if none.
checkpatch_exceptions()
{
	awk -v p="$1" '$1 == p { printf "%s%s", sep, $2; sep = "," }' \
		"$KDEV_ROOT/tooling/checkpatch-exceptions"
}

# checkpatch_head TREE PATCH: checkpatch --strict on the tree's HEAD commit,
# which was applied from PATCH. Files written by the YNL code generator
# (marked "YNL-GEN") are left out: they must not be edited by hand, and
# check_generated covers them instead.
checkpatch_head()
{
	local tree=$1 ignore f excludes=()

	while read -r f; do
		if [ -f "$tree/$f" ] && grep -q '^/\* YNL-GEN' "$tree/$f"; then
			excludes+=(":(exclude)$f")
		fi
	done < <(git -C "$tree" diff --name-only HEAD~1 HEAD)
	# stderr: spdxcheck.py cannot use a worktree of a bare repository
	# and says so on every new file; the licence tags are still parsed.
	# FILE_PATH_CHANGES ("does MAINTAINERS need updating?") fires on every
	# new file; the series only adds files under paths that MAINTAINERS
	# already covers (selftests/net, selftests/drivers/net).
	# UNKNOWN_COMMIT_ID: backports name the mainline commits they stand for
	# and fold in, which this repository, holding only the Debian base, does
	# not have.
	ignore=FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID
	f=$(checkpatch_exceptions "$(basename "$2")")
	[ -z "$f" ] || ignore+=",$f"
	git -C "$tree" format-patch -1 --stdout HEAD -- . "${excludes[@]}" |
		(cd "$tree" && scripts/checkpatch.pl --strict -q --no-summary \
			--ignore "$ignore" - \
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
	local tree=$KDEV_APPLY_TREE

	base_import
	apply_tree_lock
	base_worktree "$tree"
	total=$(series_patches | wc -l)
	series_apply "$tree" 0

	while read -r patch; do
		[ -n "$patch" ] || continue
		n=$((n + 1))
		log "[$n/$total] $(basename "$patch")"
		kgit "$tree" am -q --committer-date-is-author-date "$patch" >&2 ||
			{ kgit "$tree" am --abort >/dev/null 2>&1 || true;
			  die "$(basename "$patch") does not apply"; }
		if ! checkpatch_head "$tree" "$patch" >&2; then
			warn "checkpatch --strict complains about $(basename "$patch")"
			bad=1
		fi
		if touches_kernel "$tree"; then
			build_kernel "$tree" bench check >/dev/null
		else
			log "only Documentation/ and tools/: no kernel build needed"
		fi
	done < <(series_patches)

	check_generated "$tree"
	[ "$bad" = 0 ] || die "series check failed: checkpatch"
	log "series check passed: $total patches apply, build and are checkpatch clean ($((SECONDS - start)) s)"
}
