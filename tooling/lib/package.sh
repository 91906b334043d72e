# shellcheck shell=bash
# Installable Debian packages of the patched kernel, made with the kernel's
# own "make bindeb-pkg" (./kdev package; README.md, "Installing").

# The package's kernel release is the base version plus this, so that it
# installs beside Debian's kernels (whose releases end in -amd64), never over
# them.
KDEV_PKG_LOCALVERSION=-adaptive-irq
KDEV_PKG_OUT=$KDEV_OUT/package
# package_install_boot's packages (of the debug kernel) and its image
KDEV_PKG_TEST_OUT=$KDEV_OUT/package-test
KDEV_PKG_TEST=host:package_install_boot
# Debian's own configuration of the base kernel, when /boot has none
KDEV_PKG_CONFIG_PACKAGE=linux-config-6.12
KDEV_PKG_CONFIG_FLAVOUR=amd64_none_amd64
# What bindeb-pkg needs on top of the kernel build's packages
KDEV_PKG_APT_PACKAGES=(dpkg-dev debhelper)

# package_debian_config: Debian's config of the base's kernel version,
# from the linux-config package; prints its path.
package_debian_config()
{
	local dl=$KDEV_CACHE/dl version deb config

	version=$(base_version)
	config=$KDEV_CACHE/package-config/debian-$version.config
	if [ ! -s "$config" ]; then
		mkdir -p "$dl" "${config%/*}"
		deb=$(find "$dl" -maxdepth 1 -name "${KDEV_PKG_CONFIG_PACKAGE}_${version}_*.deb")
		if [ -z "$deb" ]; then
			log "downloading $KDEV_PKG_CONFIG_PACKAGE=$version"
			(cd "$dl" && apt-get download -q \
				"$KDEV_PKG_CONFIG_PACKAGE=$version" >&2 2>/dev/null) ||
				die "cannot download $KDEV_PKG_CONFIG_PACKAGE $version (apt-get update?)"
			deb=$(find "$dl" -maxdepth 1 -name "${KDEV_PKG_CONFIG_PACKAGE}_${version}_*.deb")
		fi
		dpkg-deb --fsys-tarfile "$deb" |
			tar -xO --wildcards "*/config.$KDEV_PKG_CONFIG_FLAVOUR.xz" |
			xz -d > "$config.tmp" || die "no $KDEV_PKG_CONFIG_FLAVOUR config in $deb"
		mv "$config.tmp" "$config"
	fi
	printf '%s\n' "$config"
}

# package_default_config: the running kernel's config if /boot has it, else
# Debian's; prints its path.
package_default_config()
{
	local running

	running=/boot/config-$(uname -r)
	if [ -r "$running" ]; then
		printf '%s\n' "$running"
	else
		package_debian_config
	fi
}

# package_config TREE CONFIG OUT: OUT/.config is CONFIG with the series'
# options, what they need of the rest (config/package.config) and the
# package's local version merged in.
package_config()
{
	local tree=$1 config=$2 out=$3 version keys

	mkdir -p "$out"
	version=$out/version.config
	printf '%s\n' "CONFIG_LOCALVERSION=\"$KDEV_PKG_LOCALVERSION\"" \
		'# CONFIG_LOCALVERSION_AUTO is not set' > "$version"
	# Debian's configs name its signing certificates, which a source tree
	# does not have; module signing keys are made by the build. (Configs
	# without these options do not get them.)
	keys=$out/keys.config
	printf '%s\n' 'CONFIG_SYSTEM_TRUSTED_KEYS=""' \
		'CONFIG_SYSTEM_REVOCATION_KEYS=""' > "$keys"
	(cd "$tree" && ARCH=x86_64 scripts/kconfig/merge_config.sh -O "$out" \
		"$config" "$KDEV_ROOT/config/series.config" \
		"$KDEV_ROOT/config/package.config" "$version" "$keys") \
		> "$out/merge_config.log" 2>&1 ||
		{ tail -n 20 "$out/merge_config.log" >&2; die "merge_config.sh failed on $config"; }
	check_fragments "$out/.config" "$KDEV_ROOT/config/series.config" \
		"$KDEV_ROOT/config/package.config" "$version"
}

# package_debs TREE BUILD PKGS [MAKE_VAR...]: "make bindeb-pkg" of the
# configured (and perhaps built) kernel in BUILD, with MAKE_VARs; moves the
# packages into PKGS and prints their paths. dpkg-buildpackage leaves its
# files in BUILD's parent.
package_debs()
{
	local tree=$1 build=$2 pkgs=$3 made=${2%/*} start=$SECONDS
	shift 3

	apt_ensure "${KDEV_PKG_APT_PACKAGES[@]}"
	mkdir -p "$pkgs"
	rm -f "$pkgs"/*.deb "$pkgs"/*.buildinfo "$pkgs"/*.changes
	log "building Debian packages in $build"
	kmake "$tree" "$build" "$@" bindeb-pkg > "$build/package.log" 2>&1 ||
		{ grep -E 'error|Error' "$build/package.log" | head -n 30 >&2
		  tail -n 20 "$build/package.log" >&2
		  die "make bindeb-pkg failed (full log: $build/package.log)"; }
	# linux-libc-dev would replace Debian's C library headers
	rm -f "$made"/linux-libc-dev_*.deb
	if [ "$made" != "$pkgs" ]; then
		find "$made" -maxdepth 1 \( -name '*.deb' -o -name '*.buildinfo' \
			-o -name '*.changes' \) -exec mv -t "$pkgs" {} +
	fi
	log "packages built in $((SECONDS - start)) s"
	find "$pkgs" -maxdepth 1 -name '*.deb' | sort
}

# package_build TREE CONFIG OUT: build the packages from CONFIG (a whole
# kernel config, with the series' fragments merged in) in OUT/build;
# prints the paths of the .deb files made, which are in OUT.
package_build()
{
	local tree=$1 config=$2 pkgs=$3

	package_config "$tree" "$config" "$pkgs/build"
	# An empty LOCALVERSION keeps setlocalversion from adding "+" for a
	# source tree that is not a release tag.
	package_debs "$tree" "$pkgs/build" "$pkgs" LOCALVERSION=
}

# The package of the user-space tools (README.md, "Using it"); no Debian
# package has this name.
KDEV_TOOLS_PACKAGE=adaptive-irq-tools
KDEV_TOOLS_DEPENDS="python3, python3-yaml, libc6"

# package_tools TREE OUT VERSION: the tools package, VERSION, built into
# OUT from the kernel TREE (the YNL CLI, its library and the netlink specs,
# where mainline's "make install" of tools/net/ynl puts them) and user/
# (make install-tools); prints its path.
package_tools()
{
	local tree=$1 out=$2 version=$3 stage=$2/tools-stage deb
	local ynl=/usr/lib/$KDEV_TOOLS_PACKAGE/ynl arch

	arch=$(dpkg --print-architecture)
	rm -rf "$stage"
	mkdir -p "$stage/DEBIAN" "$stage$ynl/lib" "$stage/usr/bin" \
		"$stage/usr/share/ynl/specs" "$stage/usr/share/doc/$KDEV_TOOLS_PACKAGE"
	make -B -s -C "$KDEV_ROOT/user" O="$out/tools-build" DESTDIR="$stage" \
		install-tools >&2 || die "cannot build user/ for the tools package"
	install -m 0755 "$tree/tools/net/ynl/cli.py" "$stage$ynl/cli.py"
	install -m 0644 "$tree"/tools/net/ynl/lib/*.py "$stage$ynl/lib/"
	ln -s "../lib/$KDEV_TOOLS_PACKAGE/ynl/cli.py" "$stage/usr/bin/ynl"
	install -m 0644 "$tree"/Documentation/netlink/*.yaml "$stage/usr/share/ynl/"
	install -m 0644 "$tree"/Documentation/netlink/specs/*.yaml \
		"$stage/usr/share/ynl/specs/"
	printf '%s\n' "The YNL CLI, its library and the netlink specs come from" \
		"the Linux kernel's tools/net/ynl and Documentation/netlink" \
		"(GPL-2.0 OR BSD-3-Clause); the rest is GPL-2.0." \
		> "$stage/usr/share/doc/$KDEV_TOOLS_PACKAGE/copyright"
	cat > "$stage/DEBIAN/control" <<-EOF
	Package: $KDEV_TOOLS_PACKAGE
	Version: $version
	Architecture: $arch
	Maintainer: $KDEV_IDENT_NAME <$KDEV_IDENT_EMAIL>
	Depends: $KDEV_TOOLS_DEPENDS
	Section: net
	Priority: optional
	Description: tools for per-NAPI settings, IRQ suspension and GSIM
	 The YNL command line (ynl) with the kernel's netlink specs; napictl,
	 which shows and sets the per-NAPI settings of an interface and watches
	 its interrupts; irq-soft-moderation, which switches software interrupt
	 moderation for a device's vectors; libepoll-busy-poll.so, which gives
	 unmodified epoll programs busy polling and IRQ suspension; a systemd
	 unit and examples that make the settings persistent.
	EOF
	# Python writes byte-code caches next to the YNL library when root
	# runs it; remove them with the package, as Debian's py3clean does
	printf '%s\n' '#!/bin/sh' 'set -e' "[ -d /usr/lib/$KDEV_TOOLS_PACKAGE ] || exit 0" \
		"find /usr/lib/$KDEV_TOOLS_PACKAGE -name __pycache__ -type d -prune -exec rm -rf {} +" \
		> "$stage/DEBIAN/prerm"
	# systemd learns of the unit, and ld.so of the library, at once
	printf '%s\n' '#!/bin/sh' 'set -e' \
		'if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi' \
		> "$stage/DEBIAN/postinst"
	cp "$stage/DEBIAN/postinst" "$stage/DEBIAN/postrm"
	chmod 755 "$stage/DEBIAN/prerm" "$stage/DEBIAN/postinst" "$stage/DEBIAN/postrm"
	echo 'activate-noawait ldconfig' > "$stage/DEBIAN/triggers"
	deb=$out/${KDEV_TOOLS_PACKAGE}_${version}_$arch.deb
	dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" > /dev/null ||
		die "dpkg-deb failed on $stage"
	printf '%s\n' "$deb"
}

# package_release DEB: the kernel release a linux-image package installs
package_release()
{
	dpkg-deb -f "$1" Package | sed 's/^linux-image-//'
}

cmd_package()
{
	local config='' debs release image

	while [ $# -gt 0 ]; do
		case "$1" in
		--config)
			[ $# -ge 2 ] || die "--config needs a file"
			config=$(readlink -f "$2")
			shift 2
			;;
		*)
			die "usage: kdev package [--config FILE]"
			;;
		esac
	done
	host_deps
	series_build_tree
	[ -n "$config" ] || config=$(package_default_config)
	[ -r "$config" ] || die "cannot read $config"
	log "config: $config, with config/series.config merged"
	debs=$(package_build "$KDEV_BUILD_TREE" "$config" "$KDEV_PKG_OUT")
	image=$(grep '/linux-image-' <<< "$debs" | grep -v -e '-dbg_' | head -n 1)
	debs+=$'\n'$(package_tools "$KDEV_BUILD_TREE" "$KDEV_PKG_OUT" \
		      "$(dpkg-deb -f "$image" Version)")
	printf '%s\n' "$debs"
	release=$(package_release "$image")
	cat <<EOF

Install beside the running kernel, with the tools (README.md, "Using it"):
  sudo apt install $KDEV_PKG_OUT/linux-image-${release}_*.deb $KDEV_PKG_OUT/linux-headers-${release}_*.deb $KDEV_PKG_OUT/${KDEV_TOOLS_PACKAGE}_*.deb
Remove (Debian's kernels stay):
  sudo dpkg -r linux-image-$release linux-headers-$release $KDEV_TOOLS_PACKAGE
EOF
}

# package_test RESULTS: package_install_boot (tests/package/install-boot.sh)
# on packages of the debug kernel the guest ran, into
# RESULTS/host-package.ktap. A step that dies fails the test, not the whole
# run.
package_test()
{
	local ktap=$1/host-package.ktap log=$KDEV_PKG_TEST_OUT.log rc=0

	rm -f "$ktap"
	mkdir -p "$KDEV_PKG_TEST_OUT"
	(package_test_run "$1") 2>&1 | tee "$log" >&2 || rc=$?
	if [ "$rc" != 0 ] && [ ! -s "$ktap" ]; then
		printf '%s\n' "# # $(grep -m1 '^ERROR: ' "$log" || echo "failed, see $log")" \
			"# not ok 1 the package test's set-up" \
			"not ok 1 selftests: ${KDEV_PKG_TEST/:/: }" > "$ktap"
	fi
}

package_test_run()
{
	local results=$1 out=$KDEV_OUT/debug debs deb image install=()
	local start=$SECONDS

	apt_ensure mmdebstrap e2fsprogs
	log "package_install_boot: packages of the debug kernel, installed and booted"
	# The debug kernel is built with tests/package.config, so packaging it
	# adds no compile; its release (-kdev+) keeps it apart from Debian's.
	check_fragments "$out/.config" "$KDEV_ROOT/tests/package.config"
	# A build failure is the test's failure, not the run's
	if ! debs=$(package_debs "$KDEV_BUILD_TREE" "$out" "$KDEV_PKG_TEST_OUT"); then
		printf '%s\n' "# # see $out/package.log" \
			"# not ok 1 packages built with make bindeb-pkg" \
			"not ok 1 selftests: ${KDEV_PKG_TEST/:/: }" > "$results/host-package.ktap"
		return 0
	fi
	while read -r deb; do
		case "$(dpkg-deb -f "$deb" Package)" in
		linux-image-*-dbg) ;;
		linux-image-*) install+=("$deb") && image=$deb ;;
		linux-headers-*) install+=("$deb") ;;
		esac
	done <<< "$debs"
	install+=("$(package_tools "$KDEV_BUILD_TREE" "$KDEV_PKG_TEST_OUT" \
		     "$(dpkg-deb -f "$image" Version)")")
	"$KDEV_ROOT/tests/package/install-boot.sh" "$KDEV_PKG_TEST_OUT/run" \
		"$KDEV_CACHE/package-image" \
		"$KDEV_OUT/debug/kselftest_install" "${install[@]}" \
		> "$results/host-package.ktap"
	log "package_install_boot took $((SECONDS - start)) s"
}
