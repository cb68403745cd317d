#!/usr/bin/env bash
# The real-boot test of the FlowFS distribution: a minimal Debian rootfs (debootstrap, cached) with
# a JRE and FUSE gets the distribution installed by its own install script, the units enabled,
# and boots under systemd-nspawn. Inside, a oneshot test unit (tests/systemd/inside.sh) checks
# that one metadata server, four I/O server instances and the mount came up at boot, that a file
# written through the mount reads back and survives `systemctl restart flowfs-ioserver@2`, that the
# tools answer, that an fstab line (mount /mnt/x, and the mount unit systemd makes of it) and
# `mount -t fuse.flowfs` work through mount.fuse.flowfs, and that `systemctl stop` of everything
# unmounts cleanly; it exits with its number of failures, which becomes nspawn's exit code. The
# host then checks the container's journal for every server's start line.
#
# usage: tests/systemd/boot-test.sh [--dist TARBALL] [--if-cached] [--rootfs-only] [--keep]
#   --dist TARBALL  the distribution to install (default: dist/target/flowfs-*.tar.gz, built if missing)
#   --if-cached     exit 77 (skip) unless the rootfs cache exists: never runs debootstrap
#   --rootfs-only   build the cached rootfs and stop
#   --keep          keep the work directory (rootfs overlay, results) for inspection
# Needs root, /dev/fuse, and Debian's mirror (for the first run and for debootstrap/systemd-nspawn
# if they are missing). The rootfs is cached in $FLOWFS_TEST_CACHE (default /var/cache/flowfs-test),
# keyed by the package list: the first run takes a few minutes, later ones about a minute.
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
top=$(cd "$here/../.." && pwd)
CACHE=${FLOWFS_TEST_CACHE:-/var/cache/flowfs-test}
SUITE=bookworm
PACKAGES=(systemd systemd-sysv dbus fuse3 libfuse2 procps attr openjdk-17-jre-headless)
# bump the first word when the way the rootfs is prepared changes
key=$(printf '%s\n' rootfs-v1 "$SUITE" "${PACKAGES[@]}" | sha256sum | cut -c1-12)
rootfs="$CACHE/rootfs-$SUITE-$key"

dist="" if_cached=0 rootfs_only=0 keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dist) dist=$2; shift 2 ;;
    --if-cached) if_cached=1; shift ;;
    --rootfs-only) rootfs_only=1; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "boot-test: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

log() { printf '[boot-test %4ds] %s\n' "$SECONDS" "$*"; }
die() { echo "boot-test: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, systemd-nspawn, FUSE)"
[ -e /dev/fuse ] || die "/dev/fuse does not exist: the test mounts FUSE inside the container"

if [ $if_cached -eq 1 ] && [ ! -f "$rootfs/.flowfs-rootfs-complete" ]; then
  echo "SKIP: no cached rootfs at $rootfs; build it once with: tests/systemd/boot-test.sh"
  exit 77
fi

# --- tools on the host ------------------------------------------------------------------------
need=()
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v systemd-nspawn >/dev/null 2>&1 || need+=(systemd-container)
command -v journalctl >/dev/null 2>&1 || need+=(systemd)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"; } >/dev/null \
    || die "cannot install ${need[*]}"
fi

# The Debian mirror this machine uses (deb822 .sources or one-line sources.list).
mirror() {
  local f u
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    u=$(awk '/^URIs:/ {print $2; exit}' "$f")
    case "$u" in *security*|"") ;; *) echo "$u"; return ;; esac
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    u=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^(http|https|file):/) { print $i; exit } }' "$f")
    case "$u" in *security*|"") ;; *) echo "$u"; return ;; esac
  done
  echo http://deb.debian.org/debian
}

# --- cgroup hygiene: run nspawn from a private cgroup, remove it afterwards -------------------
cg_name="flowfs-boot-$$"
cg_dirs=()
for h in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified; do
  [ -f "$h/cgroup.procs" ] && cg_dirs+=("$h/$cg_name")
done
if [ ${#cg_dirs[@]} -eq 0 ] && [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  cg_dirs+=("/sys/fs/cgroup/$cg_name")   # a pure cgroup v2 host
fi

cg_remove() {  # depth first: nspawn leaves payload/ and supervisor/ below ours
  local d=$1 c
  [ -d "$d" ] || return 0
  for c in "$d"/*/; do [ -d "$c" ] && cg_remove "${c%/}"; done
  rmdir "$d" 2>/dev/null || true
}

# nspawn MACHINE ARGS...: systemd-nspawn in the private cgroup, bounded in time
nspawn() {
  local machine=$1; shift
  local d rc=0
  for d in "${cg_dirs[@]}"; do mkdir -p "$d"; done
  (
    for d in "${cg_dirs[@]}"; do echo "$BASHPID" > "$d/cgroup.procs"; done
    exec timeout -k 10 "${NSPAWN_TIMEOUT:-300}" systemd-nspawn -q --register=no --keep-unit -M "$machine" "$@"
  ) || rc=$?
  for d in "${cg_dirs[@]}"; do cg_remove "$d"; done
  rm -f "/run/systemd/nspawn/propagate/$machine"
  rmdir /run/systemd/nspawn/propagate 2>/dev/null || true
  return $rc
}

# --- the cached rootfs ------------------------------------------------------------------------
if [ ! -f "$rootfs/.flowfs-rootfs-complete" ]; then
  m=$(mirror)
  log "building the rootfs with debootstrap ($SUITE from $m, ${PACKAGES[*]}) into $rootfs"
  mkdir -p "$CACHE"
  rm -rf "$rootfs.tmp"
  t0=$SECONDS
  if ! debootstrap --variant=minbase --include="$(IFS=,; echo "${PACKAGES[*]}")" \
      "$SUITE" "$rootfs.tmp" "$m" > "$CACHE/debootstrap.log" 2>&1; then
    tail -n 40 "$CACHE/debootstrap.log" >&2
    die "debootstrap failed (whole log: $CACHE/debootstrap.log)"
  fi
  # a container that boots quickly and quietly: a persistent journal, no login prompts, no
  # services that need hardware or the network
  mkdir -p "$rootfs.tmp/var/log/journal"
  echo flowfs-boot > "$rootfs.tmp/etc/hostname"
  : > "$rootfs.tmp/etc/machine-id"
  for u in console-getty.service getty@.service systemd-timesyncd.service apt-daily.timer \
           apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer; do
    ln -sf /dev/null "$rootfs.tmp/etc/systemd/system/$u"
  done
  rm -rf "$rootfs.tmp/var/cache/apt/archives/"*.deb
  touch "$rootfs.tmp/.flowfs-rootfs-complete"
  mv "$rootfs.tmp" "$rootfs"
  log "rootfs ready in $((SECONDS - t0)) s ($(du -sh "$rootfs" | cut -f1))"
fi
[ $rootfs_only -eq 1 ] && exit 0

# --- the distribution -------------------------------------------------------------------------
if [ -z "$dist" ]; then
  dist=$(ls -t "$top"/dist/target/flowfs-*.tar.gz 2>/dev/null | head -n 1 || true)
  if [ -z "$dist" ]; then
    log "building the distribution (mvn package -pl dist -am)"
    blog=$(mktemp /tmp/flowfs-build.XXXXXX)
    (cd "$top" && mvn -B -ntp -Dmaven.test.skip=true package -pl dist -am) > "$blog" 2>&1 \
      || { tail -n 60 "$blog"; die "the build failed (whole log: $blog)"; }
    rm -f "$blog"
    dist=$(ls -t "$top"/dist/target/flowfs-*.tar.gz | head -n 1)
  fi
fi
[ -f "$dist" ] || die "no distribution tarball at $dist"
tar -tzf "$dist" > /dev/null 2>&1 || die "$dist is not a whole tarball (is a build writing it?)"

# --- a throwaway root: an overlay over the cached rootfs (a copy where overlayfs is missing) ----
work=$(mktemp -d /var/tmp/flowfs-boot.XXXXXX)
root="$work/root"
mkdir -p "$root" "$work/upper" "$work/ovl" "$work/results" "$work/dist"
overlay=0
cleanup() {
  local rc=$?
  if [ $overlay -eq 1 ]; then umount "$root" 2>/dev/null || umount -l "$root" 2>/dev/null || true; fi
  for d in "${cg_dirs[@]}"; do cg_remove "$d"; done
  if [ $keep -eq 1 ]; then
    echo "boot-test: kept $work (the overlay is unmounted; its changes are in $work/upper)"
  else
    rm -rf "$work"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if mount -t overlay overlay -o "lowerdir=$rootfs,upperdir=$work/upper,workdir=$work/ovl" "$root" 2>/dev/null; then
  overlay=1
else
  log "no overlayfs here: copying the rootfs"
  cp -a "$rootfs/." "$root/"
fi

tar -xzf "$dist" -C "$work/dist"
distdir=$(find "$work/dist" -mindepth 1 -maxdepth 1 -type d | head -n 1)
[ -x "$distdir/install.sh" ] || die "$dist has no install.sh at its top"

log "installing $(basename "$dist") with its install.sh inside the rootfs"
nspawn flowfs-install-$$ -D "$root" --bind-ro="$distdir":/opt/flowfs-dist /opt/flowfs-dist/install.sh \
  > "$work/install.log" 2>&1 || { cat "$work/install.log"; die "install.sh failed inside the rootfs"; }
grep -v "Attempted to remove disk file system" "$work/install.log" | sed 's/^/  install: /'

# The site's config: the example with every server on this host (the example gives each its own
# port and directory), as a test cluster would be; install.sh already gave it a fresh secret.
conf="$root/etc/flowfs/flowfs.conf"
[ -f "$conf" ] || die "install.sh did not create /etc/flowfs/flowfs.conf"
sed -i -E 's/^((meta|io\.[0-9]+)\.address *= *)[^:]+:/\1127.0.0.1:/' "$conf"
grep -E '^(meta|io\.[0-9]+)\.(address|dir)' "$conf" | sed 's/^/  config: /'

# enable what a site enables, so the units come up at boot
systemctl --root="$root" --quiet enable flowfs-metaserver.service flowfs-ioserver@0.service \
  flowfs-ioserver@1.service flowfs-ioserver@2.service flowfs-ioserver@3.service flowfs-mount.service

# the test unit and its script
install -D -m 0755 "$here/inside.sh" "$root/usr/local/lib/flowfs-test/inside.sh"
cat > "$root/etc/systemd/system/flowfs-boot-test.service" <<'EOF'
[Unit]
Description=FlowFS boot test (exits the container with its number of failures)
After=multi-user.target remote-fs.target
SuccessAction=exit
FailureAction=exit

[Service]
Type=oneshot
ExecStart=/usr/local/lib/flowfs-test/inside.sh
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=240

[Install]
WantedBy=multi-user.target
EOF
systemctl --root="$root" --quiet enable flowfs-boot-test.service

log "booting the container (systemd-nspawn -b)"
t0=$SECONDS
rc=0
NSPAWN_TIMEOUT=300 nspawn flowfs-boot-$$ -D "$root" -b --link-journal=no --private-network \
  --bind=/dev/fuse --bind="$work/results":/results > "$work/console.log" 2>&1 || rc=$?
log "the container exited with $rc after $((SECONDS - t0)) s"

[ -f "$work/results/log" ] && sed 's/^/  /' "$work/results/log"
# every server's start line, read from the container's journal on the host
jctl() { journalctl -D "$root/var/log/journal" --no-pager -q "$@" 2>/dev/null; }
starts=$(jctl -o cat -u flowfs-metaserver.service -u 'flowfs-ioserver@*' -u flowfs-mount.service \
  | grep -E 'metaserver started|ioserver [0-9]+ started|mounted ' || true)
echo "$starts" | sed 's/^/  journal: /'
missing=0
for want in 'metaserver started' 'ioserver 0 started' 'ioserver 1 started' 'ioserver 2 started' \
            'ioserver 3 started' 'mounted '; do
  grep -q "$want" <<< "$starts" || { echo "boot-test: the journal has no '$want' line" >&2; missing=$((missing + 1)); }
done

if [ $rc -ne 0 ] || [ $missing -ne 0 ] || [ ! -f "$work/results/done" ]; then
  [ -s "$work/results/detail" ] && { echo "=== output of the failed checks"; cat "$work/results/detail"; }
  echo "=== console (last 60 lines)"; tail -n 60 "$work/console.log"
  echo "=== journal of the container (journalctl -D ROOT/var/log/journal), last 400 lines"
  jctl -o short-monotonic | tail -n 400
  echo "boot-test: FAILED (container exit $rc, $missing start lines missing)"
  exit 1
fi
echo "boot-test: PASSED ($(grep -c '^ok ' "$work/results/log") checks; boot and test in $((SECONDS - t0)) s, $SECONDS s in all)"
