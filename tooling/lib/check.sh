# shellcheck shell=bash
# The series check: every patch applies on the ones before it, the kernel
# builds after each patch (the series is bisectable), and checkpatch --strict
# has nothing to say about any patch.
#
# It walks the tooling's own build tree and debug build directory, so it
# shares their ccache hits, and leaves both at the full series.

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
		if ! (cd "$KDEV_BUILD_TREE" &&
		      scripts/checkpatch.pl --strict -q --no-summary "$patch") >&2; then
			warn "checkpatch --strict complains about $(basename "$patch")"
			bad=1
		fi
		build_kernel "$KDEV_BUILD_TREE" debug >/dev/null ||
			die "the kernel does not build after $(basename "$patch")"
	done < <(series_patches)

	mkdir -p "$(dirname "$state")"
	series_stamp > "$state"
	[ "$bad" = 0 ] || die "series check failed: checkpatch"
	log "series check passed: $total patches apply, build and are checkpatch clean ($((SECONDS - start)) s)"
}
