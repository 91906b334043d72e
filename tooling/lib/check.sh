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
#
# Our configs build a small part of the kernel. Once the whole series is
# applied, every C file that uses a struct or symbol the series changes in
# include/ is compiled with Debian's own config as well, so that a user's
# full build (./kdev package) does not break on a driver we never built.
# Only the final tree is built so: it is too big to build per patch.

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

# changed_users TREE: the C files that use what the series changes in
# include/ (tooling/changed_symbols.py), architectures other than x86 and
# what the kernel build does not compile left out
changed_users()
{
	local tree=$1 pattern pats=()

	while read -r pattern; do
		pats+=(-e "$pattern")
	done < <(/usr/bin/python3 "$KDEV_ROOT/tooling/changed_symbols.py" \
			"$tree" "$KDEV_BASE_TAG")
	[ "${#pats[@]}" -gt 0 ] || return 0
	git -C "$tree" grep -l -w "${pats[@]}" -- '*.c' |
		awk '!/^(tools|Documentation|samples|scripts|usr)\// &&
		     (!/^arch\// || /^arch\/x86\//)'
}

# check_debian_objects TREE: compile the objects of changed_users that
# Debian's config builds. Kbuild would compile any object asked for by name
# (with the flags of its directory, even where the config builds nothing),
# so the objects Debian builds are first read from a dry run of the
# directories that hold them.
check_debian_objects()
{
	local tree=$1 out=$KDEV_OUT/check-debian start=$SECONDS files dirs objs

	mapfile -t files < <(changed_users "$tree")
	[ "${#files[@]}" -gt 0 ] || return 0
	package_config "$tree" "$(package_debian_config)" "$out"
	kmake "$tree" "$out" prepare > "$out/debian-objects.log" 2>&1 ||
		{ tail -n 20 "$out/debian-objects.log" >&2; die "make prepare failed with Debian's config"; }
	mapfile -t dirs < <(printf '%s/\n' "${files[@]%/*}" | sort -u)
	# -n: the commands make would run; compilations name their object
	mapfile -t objs < <(kmake "$tree" "$out" -n -k "${dirs[@]}" 2>/dev/null |
		grep -oE -- ' -o [^ ]+\.o ' | awk '{ print $2 }' | sort -u |
		comm -12 - <(printf '%s\n' "${files[@]/%.c/.o}" | sort -u))
	log "compiling ${#objs[@]} of the ${#files[@]} users of what the series changes in include/ (the rest is not in Debian's config), with Debian's config"
	[ "${#objs[@]}" -gt 0 ] || return 0
	if ! kmake "$tree" "$out" -k "${objs[@]}" >> "$out/debian-objects.log" 2>&1; then
		grep -E 'error|Error' "$out/debian-objects.log" | head -n 30 >&2
		die "users of what the series changes fail to build with Debian's config (see $out/debian-objects.log)"
	fi
	log "built with Debian's config in $((SECONDS - start)) s"
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
	check_debian_objects "$tree"
	[ "$bad" = 0 ] || die "series check failed: checkpatch"
	log "series check passed: $total patches apply, build and are checkpatch clean ($((SECONDS - start)) s)"
}
