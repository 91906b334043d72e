# shellcheck shell=bash
# Kernel and selftest builds. A flavour is a set of config fragments with its
# own build directory: "debug" for tests, "kcsan" for the same tests on a
# kernel with the race detector instead of KASAN, "bench" for benchmarks.

KDEV_KSELFTESTS=$KDEV_ROOT/tests/kselftests
KDEV_KUNIT_CONFIG=$KDEV_ROOT/tests/kunit.config

# selection: the selected kselftests, one collection:test per line.
selection()
{
	grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' -e '^only ' "$KDEV_KSELFTESTS"
}

# user_tests: the tests of the programs for users (user/), as
# "user:NAME"; they run in the guest after the kselftests.
user_tests()
{
	local t

	for t in "$KDEV_ROOT"/user/tests/*.sh; do
		[ -x "$t" ] && echo "user:${t##*/}"
	done
}

# selection_collections: the kselftest collections (TARGETS) to build.
selection_collections()
{
	selection | cut -d: -f1 | sort -u
}

# selection_only COLLECTION: for a collection restricted with an
# "only COLLECTION HELPER..." line, the helper programs its selected tests
# need; fails for a collection that is built whole.
selection_only()
{
	awk -v c="$1" '$1 == "only" && $2 == c { $1 = $2 = ""; print; found = 1 }
		       END { exit !found }' "$KDEV_KSELFTESTS"
}

# test_fragments SANITIZER: the fragments of a kernel for the tests, with
# config/SANITIZER.config (kasan or kcsan, which cannot be combined); the
# stress run is one of the tests.
test_fragments()
{
	printf '%s\n' "$KDEV_ROOT/config/debug.config" \
		"$KDEV_ROOT/config/$1.config" "$KDEV_KUNIT_CONFIG" \
		"$KDEV_ROOT/user/tests/config" "$KDEV_ROOT/tests/stress/config"
}

# own_fragments FLAVOUR: the repo's fragments for a flavour.
own_fragments()
{
	local flavour=$1

	printf '%s\n' "$KDEV_ROOT/config/guest.config"
	case "$flavour" in
	debug)
		# package_install_boot packages this kernel and boots it
		# in a Debian image
		test_fragments kasan
		printf '%s\n' "$KDEV_ROOT/tests/package.config"
		;;
	kcsan)
		test_fragments kcsan
		;;
	bench)
		;;
	*)
		die "unknown build flavour $flavour"
		;;
	esac
}

# selftest_fragments TREE: the config fragments the selected selftests declare.
selftest_fragments()
{
	local tree=$1 c

	selection_collections | while read -r c; do
		if [ -f "$tree/tools/testing/selftests/$c/config" ]; then
			printf '%s\n' "$tree/tools/testing/selftests/$c/config"
		fi
	done
}

# soft_fragments TREE: fragments that may name options a tree does not have
# (yet): the series' own options, so that every patch that adds code under
# a new option is built with it by the series check, and the selected
# selftests' fragments, which cover every architecture and driver.
soft_fragments()
{
	printf '%s\n' "$KDEV_ROOT/config/series.config"
	selftest_fragments "$1"
}

# check_fragments CONFIG FRAGMENT...: every value our own fragments ask for
# must be in the final config; a silently dropped option is a broken guest.
check_fragments()
{
	local config=$1 frag line sym bad=0
	shift

	for frag in "$@"; do
		while read -r line; do
			case "$line" in
			CONFIG_*=*)
				grep -qxF -- "$line" "$config" && continue
				;;
			'# CONFIG_'*' is not set')
				sym=${line#\# }
				sym=${sym%% *}
				grep -q "^$sym=" "$config" || continue
				;;
			*)
				continue
				;;
			esac
			warn "${frag#"$KDEV_ROOT"/}: '$line' is not in the final config"
			bad=1
		done < "$frag"
	done
	[ "$bad" = 0 ] || die "config fragments do not apply cleanly (dependencies missing?)"
}

# build_config TREE FLAVOUR OUT: merge the fragments on top of allnoconfig.
build_config()
{
	local tree=$1 flavour=$2 out=$3 own soft

	mapfile -t own < <(own_fragments "$flavour")
	mapfile -t soft < <(soft_fragments "$tree")
	own+=("$KDEV_ROOT/config/overrides.config")
	mkdir -p "$out"
	(cd "$tree" && ARCH=x86_64 scripts/kconfig/merge_config.sh -n -O "$out" \
		"${own[@]:0:${#own[@]}-1}" "${soft[@]}" "${own[-1]}") \
		> "$out/merge_config.log" 2>&1 ||
		{ tail -n 20 "$out/merge_config.log" >&2; die "merge_config.sh failed"; }
	# What the soft fragments ask for and cannot be set here is reported,
	# not fatal.
	log "merge_config: $(grep -c '^Value requested for' "$out/merge_config.log" || true) selftest or series config values not applicable here (see $out/merge_config.log)"
	check_fragments "$out/.config" "${own[@]}"
}

# kmake TREE OUT ARGS...: make for the kernel with ccache.
kmake()
{
	local tree=$1 out=$2
	shift 2

	make -C "$tree" O="$out" ARCH=x86_64 -j"$KDEV_JOBS" -s \
		CC="ccache gcc" HOSTCC="ccache gcc" "$@"
}

# build_kernel TREE FLAVOUR [DIR]: configure and build bzImage and modules
# in $KDEV_OUT/DIR (default: the flavour's name); print the build directory.
# Builds of different trees get different directories, so that each stays
# incremental.
build_kernel()
{
	local tree=$1 flavour=$2 out start=$SECONDS

	out=$KDEV_OUT/${3:-$flavour}

	build_config "$tree" "$flavour" "$out"
	log "building the $flavour kernel in $out"
	kmake "$tree" "$out" bzImage modules > "$out/build.log" 2>&1 ||
		{ grep -E 'error|Error' "$out/build.log" | head -n 30 >&2; tail -n 20 "$out/build.log" >&2;
		  die "kernel build failed (full log: $out/build.log)"; }
	log "kernel built in $((SECONDS - start)) s"
	printf '%s\n' "$out"
}

# selftest_restrict TREE OUT COLLECTION: make variables that limit a
# restricted collection to its selected tests and their helpers (nothing for
# a collection built whole). Set on the command line, they replace the
# collection's own lists, so programs carry lib.mk's $(OUTPUT)/ prefix.
selftest_restrict()
{
	local tree=$1 output=$2/kselftest/$3 c=$3 helpers t h
	local progs=() gen=() files=()

	helpers=$(selection_only "$c") || return 0
	while IFS=: read -r _ t; do
		if [ -e "$tree/tools/testing/selftests/$c/$t" ]; then
			progs+=("$t")
		else
			gen+=("$output/$t")
		fi
	done < <(selection | grep "^$c:")
	for h in $helpers; do
		files+=("$output/$h")
	done
	# net/lib is installed with the collections that use it whole.
	printf '%s\n' "TEST_PROGS=${progs[*]}" "TEST_GEN_PROGS=${gen[*]}" \
		"TEST_GEN_PROGS_EXTENDED=" "TEST_GEN_FILES=${files[*]}" \
		"INSTALL_DEP_TARGETS="
}

# build_selftests TREE OUT: build and install the selected collections with
# the kernel's own kselftest install (run_kselftest.sh + kselftest-list.txt),
# one collection at a time so that a restricted one gets its own variables.
build_selftests()
{
	local tree=$1 out=$2 inst=$2/kselftest_install c start=$SECONDS
	local list restrict

	log "building kselftests: $(selection_collections | tr '\n' ' ')"
	kmake "$tree" "$out" headers > "$out/headers.log" 2>&1 ||
		die "make headers failed (see $out/headers.log)"
	rm -rf "$inst"
	# The YNL library is generated into the source tree, which is cleaned
	# whenever patches/ changes: never keep a copy built from another tree.
	rm -f "$out"/kselftest/*/libynl.a
	list=$(mktemp)
	: > "$out/kselftest-build.log"
	for c in $(selection_collections); do
		mapfile -t restrict < <(selftest_restrict "$tree" "$out" "$c")
		make -C "$tree/tools/testing/selftests" O="$out" -j"$KDEV_JOBS" \
			CC="ccache gcc" TARGETS="$c" INSTALL_PATH="$inst" \
			"${restrict[@]}" install >> "$out/kselftest-build.log" 2>&1 ||
			warn "kselftest collection $c did not build whole (see $out/kselftest-build.log)"
		cat "$inst/kselftest-list.txt" >> "$list" 2>/dev/null || true
	done
	mv "$list" "$inst/kselftest-list.txt"
	chmod 644 "$inst/kselftest-list.txt"
	selection | while IFS=: read -r c t; do
		[ -e "$inst/$c/$t" ] ||
			warn "selected kselftest $c:$t was not built (see $out/kselftest-build.log)"
	done
	log "kselftests built in $((SECONDS - start)) s"
}

# build_user OUT: the programs of user/ and their test helpers, into
# OUT/user. A build failure fails the tests, which find their programs
# missing.
build_user()
{
	# -B: another checkout (a mutation's copy) may have built into the
	# same directory with newer files than these sources
	make -B -C "$KDEV_ROOT/user" O="$1/user" tests > "$1/user-build.log" 2>&1 ||
		warn "user/ did not build (see $1/user-build.log)"
}
