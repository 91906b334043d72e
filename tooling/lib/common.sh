# shellcheck shell=bash
# The variables set here are used by the commands that source this file:
# shellcheck disable=SC2034
# Paths, logging and host set-up shared by every kdev command.
#
# Everything that is big or machine-local lives in $KDEV_CACHE, outside the
# checkout: the downloaded base, the kernel git trees, build output, ccache
# and the virtme-ng venv.

KDEV_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KDEV_CACHE=${KDEV_CACHE:-/var/cache/napi-kdev}
KDEV_JOBS=${KDEV_JOBS:-$(nproc)}

# shellcheck source=../../base.conf
. "$KDEV_ROOT/base.conf"

KDEV_REPO=$KDEV_CACHE/src/linux.git	# bare repo holding the base commit
KDEV_BUILD_TREE=$KDEV_CACHE/src/build	# base + patches/, what the tests build
KDEV_APPLY_TREE=$KDEV_CACHE/src/apply	# where patches are applied and checked
KDEV_DEV_TREE=${KDEV_DEV_TREE:-$KDEV_CACHE/src/dev}	# developers edit here
KDEV_OUT=$KDEV_CACHE/out		# one build directory per flavour
KDEV_VENV=$KDEV_CACHE/venv
KDEV_BASE_TAG=base
KDEV_DEV_BRANCH=dev

export CCACHE_DIR=${CCACHE_DIR:-$KDEV_CACHE/ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-20G}

# Identity for commits made by the tooling (base import, git am).
KDEV_IDENT_NAME="Adaptive IRQ Project"
KDEV_IDENT_EMAIL="adaptive-irq@example.invalid"

log()
{
	printf '==> %s\n' "$*" >&2
}

warn()
{
	printf 'WARNING: %s\n' "$*" >&2
}

die()
{
	printf 'ERROR: %s\n' "$*" >&2
	exit 1
}

# kgit TREE ARGS...: git in one of the kernel trees, with the tooling identity.
kgit()
{
	local tree=$1
	shift
	git -C "$tree" -c user.name="$KDEV_IDENT_NAME" \
		-c user.email="$KDEV_IDENT_EMAIL" "$@"
}

# Debian packages the host needs: kernel build, QEMU, and what the tests run
# in the guest (virtme-ng shares the host root filesystem with the guest).
KDEV_APT_PACKAGES=(
	bc bison build-essential ccache cpio dwarves flex git kmod
	libcap-dev libelf-dev libmnl-dev libnuma-dev libssl-dev
	python3 python3-jsonschema python3-venv python3-yaml
	qemu-system-x86 rsync
	ethtool iproute2 procps socat udev util-linux
	fio
)

# apt_ensure PACKAGE...: install those of the Debian packages that are
# missing; quiet when all are there.
apt_ensure()
{
	local missing=() pkg

	for pkg in "$@"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$pkg")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	log "installing Debian packages: ${missing[*]}"
	apt-get update -q >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${missing[@]}" >/dev/null
}

# host_deps: install what is missing. Idempotent and quiet when all is there.
host_deps()
{
	apt_ensure "${KDEV_APT_PACKAGES[@]}"

	if [ ! -x "$KDEV_VENV/bin/vng" ]; then
		log "installing virtme-ng into $KDEV_VENV"
		/usr/bin/python3 -m venv "$KDEV_VENV"
		"$KDEV_VENV/bin/pip" install -q "virtme-ng==$KDEV_VNG_VERSION"
	fi
	host_guest_tools
	host_guest_programs
}

# Programs the guest runs that must be newer than Debian 12's: ethtool 6.1
# cannot show all the coalescing and pause settings a 6.12 kernel reports,
# which the netdevsim ethtool tests check. Debian 13 (trixie) builds it
# against a glibc that Debian 12 has; unpacked into the cache, not
# installed, it is put first in the guest's PATH.
KDEV_GUEST_TOOLS=$KDEV_CACHE/guest-tools
KDEV_GUEST_TOOLS_SUITE=trixie
KDEV_GUEST_TOOLS_PACKAGES=(ethtool)

# Programs only the guest runs (memcached, for the tests of user/), from
# the host's own Debian release: unpacked into the cache rather than
# installed, so that no service of theirs starts on the host. The
# libraries they need are installed (KDEV_GUEST_PROGRAMS_LIBS).
KDEV_GUEST_PROGRAMS=$KDEV_CACHE/guest-programs
KDEV_GUEST_PROGRAMS_PACKAGES=(memcached)
KDEV_GUEST_PROGRAMS_LIBS=(libevent-2.1-7 libsasl2-2)
KDEV_GUEST_PATH=$KDEV_GUEST_TOOLS/usr/sbin:$KDEV_GUEST_TOOLS/usr/bin:$KDEV_GUEST_PROGRAMS/usr/bin

# host_guest_tools: unpack the guest's newer tools, once.
host_guest_tools()
{
	local lists=$KDEV_CACHE/apt-$KDEV_GUEST_TOOLS_SUITE sources pkg deb

	[ -f "$KDEV_GUEST_TOOLS/.done" ] && return 0
	log "fetching ${KDEV_GUEST_TOOLS_PACKAGES[*]} from Debian $KDEV_GUEST_TOOLS_SUITE for the guest"
	mkdir -p "$lists/lists/partial" "$KDEV_GUEST_TOOLS"
	sources=$lists/debian.sources
	printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' \
		"Suites: $KDEV_GUEST_TOOLS_SUITE" 'Components: main' \
		'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' > "$sources"
	local apt_opts=(-q -o Dir::Etc::sourcelist="$sources"
			-o Dir::Etc::sourceparts=- -o Dir::State::Lists="$lists/lists"
			-o APT::Get::List-Cleanup=0)
	apt-get "${apt_opts[@]}" update >/dev/null
	for pkg in "${KDEV_GUEST_TOOLS_PACKAGES[@]}"; do
		(cd "$lists" && apt-get "${apt_opts[@]}" download "$pkg" >/dev/null 2>&1) ||
			die "cannot download $pkg from Debian $KDEV_GUEST_TOOLS_SUITE"
		deb=$(find "$lists" -maxdepth 1 -name "${pkg}_*.deb" | head -n 1)
		dpkg-deb -x "$deb" "$KDEV_GUEST_TOOLS"
		log "  $pkg $(dpkg-deb -f "$deb" Version)"
	done
	"$KDEV_GUEST_TOOLS/usr/sbin/ethtool" --version >/dev/null ||
		die "$KDEV_GUEST_TOOLS_SUITE's ethtool does not run here"
	touch "$KDEV_GUEST_TOOLS/.done"
}

# host_guest_programs: unpack the programs only the guest runs, once.
host_guest_programs()
{
	local dl=$KDEV_CACHE/dl/guest-programs pkg deb

	[ "$(cat "$KDEV_GUEST_PROGRAMS/.done" 2>/dev/null)" = "${KDEV_GUEST_PROGRAMS_PACKAGES[*]}" ] &&
		return 0
	apt_ensure "${KDEV_GUEST_PROGRAMS_LIBS[@]}"
	log "fetching ${KDEV_GUEST_PROGRAMS_PACKAGES[*]} for the guest"
	mkdir -p "$dl" "$KDEV_GUEST_PROGRAMS"
	for pkg in "${KDEV_GUEST_PROGRAMS_PACKAGES[@]}"; do
		if ! (cd "$dl" && apt-get -q download "$pkg" >/dev/null 2>&1); then
			apt-get update -q >/dev/null
			(cd "$dl" && apt-get -q download "$pkg" >/dev/null 2>&1) ||
				die "cannot download $pkg"
		fi
		deb=$(find "$dl" -maxdepth 1 -name "${pkg}_*.deb" | sort -V | tail -n 1)
		dpkg-deb -x "$deb" "$KDEV_GUEST_PROGRAMS"
		log "  $pkg $(dpkg-deb -f "$deb" Version)"
	done
	"$KDEV_GUEST_PROGRAMS/usr/bin/memcached" --version >/dev/null ||
		die "the unpacked memcached does not run here"
	echo "${KDEV_GUEST_PROGRAMS_PACKAGES[*]}" > "$KDEV_GUEST_PROGRAMS/.done"
}

KDEV_VNG_VERSION=1.42

# stamp_of FILE...: a content hash that changes when any input changes.
stamp_of()
{
	cat "$@" | sha256sum | cut -d' ' -f1
}
