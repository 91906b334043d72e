# shellcheck shell=bash
# The pinned base: fetch Debian's linux-source package and import it as the
# first commit of a git repository in the cache.

KDEV_BASE_STATE=$KDEV_CACHE/base-version	# version actually imported

# base_fetch: download the pinned package (or, if it is gone, the newest one
# with a loud warning) and print the path of the .deb.
base_fetch()
{
	local dl=$KDEV_CACHE/dl deb

	mkdir -p "$dl"
	deb=$(find "$dl" -maxdepth 1 -name "${BASE_PACKAGE}_${BASE_VERSION}_*.deb")
	if [ -z "$deb" ]; then
		log "downloading $BASE_PACKAGE=$BASE_VERSION"
		if ! (cd "$dl" && apt-get download -q \
				"$BASE_PACKAGE=$BASE_VERSION" >&2 2>/dev/null); then
			apt-get update -q >/dev/null
			if ! (cd "$dl" && apt-get download -q \
					"$BASE_PACKAGE=$BASE_VERSION" >&2); then
				warn "$BASE_PACKAGE $BASE_VERSION is no longer available; falling back to the newest $BASE_PACKAGE"
				(cd "$dl" && apt-get download -q "$BASE_PACKAGE" >&2) ||
					die "cannot download $BASE_PACKAGE"
			fi
		fi
		deb=$(find "$dl" -maxdepth 1 -name "${BASE_PACKAGE}_*.deb" | sort -V | tail -n 1)
	fi
	[ "$(printf '%s\n' "$deb" | wc -l)" = 1 ] || die "several base packages in $dl"
	printf '%s\n' "$deb"
}

# base_version: the version of the base in use (after base_import).
base_version()
{
	cat "$KDEV_BASE_STATE"
}

# base_import: make $KDEV_REPO hold the base as its first commit, tagged
# $KDEV_BASE_TAG. The commit is reproducible: same package, same hash.
base_import()
{
	local deb version tmp src

	if git --git-dir="$KDEV_REPO" rev-parse -q --verify \
			"refs/tags/$KDEV_BASE_TAG" >/dev/null 2>&1; then
		return 0
	fi

	deb=$(base_fetch)
	version=$(dpkg-deb -f "$deb" Version)
	[ "$version" = "$BASE_VERSION" ] ||
		warn "using base $BASE_PACKAGE $version instead of the pinned $BASE_VERSION"

	log "importing $BASE_PACKAGE $version into $KDEV_REPO"
	rm -rf "$KDEV_CACHE"/import.*
	tmp=$(mktemp -d "$KDEV_CACHE/import.XXXXXX")
	dpkg-deb --fsys-tarfile "$deb" |
		tar -x -C "$tmp" --wildcards './usr/src/*.tar.xz'
	mkdir "$tmp/tree"
	tar -xJf "$tmp"/usr/src/*.tar.xz -C "$tmp/tree" --strip-components=1
	src=$tmp/tree

	rm -rf "$KDEV_REPO"
	git init -q --bare "$KDEV_REPO"
	git --git-dir="$KDEV_REPO" config gc.auto 0
	GIT_DIR=$KDEV_REPO GIT_WORK_TREE=$src git add -A -f .
	GIT_DIR=$KDEV_REPO GIT_WORK_TREE=$src \
		GIT_AUTHOR_DATE=2025-01-01T00:00:00Z GIT_COMMITTER_DATE=2025-01-01T00:00:00Z \
		git -c user.name="$KDEV_IDENT_NAME" -c user.email="$KDEV_IDENT_EMAIL" \
		commit -q -m "Linux $version ($BASE_PACKAGE)"
	rm -rf "$tmp"
	# Worktrees made from an older import are stale now.
	rm -rf "$KDEV_CACHE/src/build" "$KDEV_CACHE/src/check" "$KDEV_CACHE/src/dev"
	git --git-dir="$KDEV_REPO" worktree prune
	printf '%s\n' "$version" > "$KDEV_BASE_STATE"
	# The tag is what marks the import as complete.
	git --git-dir="$KDEV_REPO" tag "$KDEV_BASE_TAG"
}

# base_worktree DIR: make sure DIR is a worktree of $KDEV_REPO.
base_worktree()
{
	local dir=$1

	[ -e "$dir/.git" ] && return 0
	git --git-dir="$KDEV_REPO" worktree prune
	git --git-dir="$KDEV_REPO" worktree add -q --detach "$dir" "$KDEV_BASE_TAG"
}
