#!/usr/bin/env bash
# Installs this FlowFS distribution on a server or client, as root:
#   ./install.sh                      # into /usr/lib/flowfs, /usr/bin/flowfs, units, /etc/flowfs
#   ./install.sh --prefix /opt/flowfs # the jars and scripts elsewhere (/usr/bin/flowfs still links to them)
#   ./install.sh --root /srv/image    # into another root (an image or chroot being built)
#   ./install.sh --uninstall          # removes the program and units; keeps /etc/flowfs and /var/lib/flowfs
#
# What it puts in place:
#   PREFIX/{bin,lib,sbin,systemd}      the launcher, every jar, the mount helper, the units (as shipped)
#   /usr/bin/flowfs                    -> PREFIX/bin/flowfs
#   /sbin/mount.fuse.flowfs            -> PREFIX/sbin/mount.fuse.flowfs (mount -t fuse.flowfs, fstab)
#   UNITDIR/flowfs-*.service          (UNITDIR: /usr/lib/systemd/system)
#   /usr/lib/sysusers.d/flowfs.conf    the system user 'flowfs' the servers run as (created now)
#   /etc/flowfs/flowfs.conf.example    always refreshed
#   /etc/flowfs/flowfs.conf            only if there is none: the example with a fresh fs.secret
#   /etc/default/flowfs                only if there is none: JVM options for every unit
# It enables nothing: see the messages at the end, or README.md "Installing on servers".
set -euo pipefail

src=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
prefix=/usr/lib/flowfs
root=/
unitdir=/usr/lib/systemd/system
uninstall=0

die() { echo "install.sh: $*" >&2; exit 1; }
say() { echo "install.sh: $*"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --prefix=*) prefix=${1#*=}; shift ;;
    --root) root=${2:?--root needs a directory}; shift 2 ;;
    --root=*) root=${1#*=}; shift ;;
    --unitdir) unitdir=${2:?--unitdir needs a directory}; shift 2 ;;
    --unitdir=*) unitdir=${1#*=}; shift ;;
    --uninstall) uninstall=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case "$prefix" in /*) ;; *) die "--prefix must be an absolute path, not '$prefix'" ;; esac
case "$unitdir" in /*) ;; *) die "--unitdir must be an absolute path, not '$unitdir'" ;; esac
[ -d "$root" ] || die "--root $root is not a directory"
root=$(cd "$root" && pwd)
R=${root%/}   # "" for the running system
[ -w "$root" ] || die "cannot write to $root: run as root"

units=(flowfs-metaserver.service flowfs-ioserver@.service flowfs-mount.service)
systemd_running() { [ -z "$R" ] && [ -d /run/systemd/system ]; }

if [ $uninstall -eq 1 ]; then
  for u in "${units[@]}"; do rm -f "$R$unitdir/$u"; done
  [ "$(readlink "$R/usr/bin/flowfs" 2>/dev/null)" = "$prefix/bin/flowfs" ] && rm -f "$R/usr/bin/flowfs"
  [ "$(readlink "$R/sbin/mount.fuse.flowfs" 2>/dev/null)" = "$prefix/sbin/mount.fuse.flowfs" ] && rm -f "$R/sbin/mount.fuse.flowfs"
  rm -rf "$R$prefix"
  if systemd_running; then systemctl daemon-reload; fi
  say "removed $prefix, /usr/bin/flowfs, /sbin/mount.fuse.flowfs and the units; kept /etc/flowfs, /var/lib/flowfs and the user 'flowfs'"
  exit 0
fi

for f in bin/flowfs sbin/mount.fuse.flowfs etc/flowfs/flowfs.conf.example; do
  [ -f "$src/$f" ] || die "$src is not a FlowFS distribution: $f is missing"
done
ls "$src"/lib/*.jar >/dev/null 2>&1 || die "$src/lib has no jars"

# --- the program: replace PREFIX as a whole, so no jar of an older version stays behind ---------
mkdir -p "$(dirname "$R$prefix")"
rm -rf "$R$prefix.new" "$R$prefix.old"
mkdir -p "$R$prefix.new"
cp -R "$src/bin" "$src/lib" "$src/sbin" "$src/systemd" "$R$prefix.new/"
[ -f "$src/README.md" ] && cp "$src/README.md" "$R$prefix.new/"
chmod 0755 "$R$prefix.new/bin/flowfs" "$R$prefix.new/sbin/mount.fuse.flowfs"
[ -d "$R$prefix" ] && mv "$R$prefix" "$R$prefix.old"
mv "$R$prefix.new" "$R$prefix"
rm -rf "$R$prefix.old"
mkdir -p "$R/usr/bin" "$R/sbin"
ln -sfn "$prefix/bin/flowfs" "$R/usr/bin/flowfs"
ln -sfn "$prefix/sbin/mount.fuse.flowfs" "$R/sbin/mount.fuse.flowfs"
say "installed $(ls "$R$prefix/lib" | wc -l) jars in $prefix; /usr/bin/flowfs and /sbin/mount.fuse.flowfs link to it"

# --- units ---------------------------------------------------------------------------------------
mkdir -p "$R$unitdir"
for u in "${units[@]}"; do install -m 0644 "$src/systemd/$u" "$R$unitdir/$u"; done
say "installed ${units[*]} in $unitdir"

# --- the system user the servers run as ----------------------------------------------------------
mkdir -p "$R/usr/lib/sysusers.d"
cat > "$R/usr/lib/sysusers.d/flowfs.conf" <<'EOF'
# The user FlowFS's servers run as (flowfs-metaserver, flowfs-ioserver@); its home holds their data.
u flowfs - "FlowFS servers" /var/lib/flowfs /usr/sbin/nologin
EOF
if ! grep -q '^flowfs:' "$R/etc/passwd" 2>/dev/null; then
  if command -v systemd-sysusers >/dev/null 2>&1; then
    # a bare file name: looked up in ROOT's sysusers.d directories
    systemd-sysusers ${R:+--root="$root"} flowfs.conf
  elif command -v useradd >/dev/null 2>&1; then
    useradd ${R:+--root "$root"} --system --user-group --home-dir /var/lib/flowfs --no-create-home \
      --shell /usr/sbin/nologin --comment "FlowFS servers" flowfs
  else
    die "cannot create the system user 'flowfs': neither systemd-sysusers nor useradd is installed"
  fi
  grep -q '^flowfs:' "$R/etc/passwd" || die "creating the system user 'flowfs' failed"
  say "created the system user 'flowfs'"
fi
gid=$(awk -F: '$1 == "flowfs" { print $3 }' "$R/etc/group")

# --- /etc ----------------------------------------------------------------------------------------
mkdir -p "$R/etc/flowfs"
chown "0:$gid" "$R/etc/flowfs"
chmod 0750 "$R/etc/flowfs"
install -m 0644 "$src/etc/flowfs/flowfs.conf.example" "$R/etc/flowfs/flowfs.conf.example"
if [ ! -e "$R/etc/flowfs/flowfs.conf" ]; then
  secret=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
  sed "s/^fs\.secret = CHANGE-ME\$/fs.secret = $secret/" "$src/etc/flowfs/flowfs.conf.example" > "$R/etc/flowfs/flowfs.conf"
  chown "0:$gid" "$R/etc/flowfs/flowfs.conf"
  chmod 0640 "$R/etc/flowfs/flowfs.conf"
  say "created /etc/flowfs/flowfs.conf from the example, with a new fs.secret: set the servers' addresses in it"
else
  say "kept the existing /etc/flowfs/flowfs.conf"
fi
if [ ! -e "$R/etc/default/flowfs" ]; then
  mkdir -p "$R/etc/default"
  cat > "$R/etc/default/flowfs" <<'EOF'
# Read by every FlowFS unit. FLOWFS_JAVA_OPTS adds JVM flags after the launcher's defaults
# (metaserver and ioserver: -Xmx256m, mount: -Xmx512m), so a larger heap goes here, e.g.
#FLOWFS_JAVA_OPTS="-Xmx2g -XX:MaxDirectMemorySize=2g"
# Log level (INFO by default); FLOWFS_ACCESS_LOG=DEBUG logs every FUSE operation of a mount.
#FLOWFS_LOG=INFO
EOF
fi

# --- Java: the launcher needs it at run time ------------------------------------------------------
java_found=0
if [ -z "$R" ]; then command -v java >/dev/null 2>&1 && java_found=1
else [ -e "$R/usr/bin/java" ] && java_found=1; fi
if [ $java_found -eq 0 ]; then
  say "WARNING: no java found: FlowFS needs Java 17 or newer (Debian: apt-get install openjdk-17-jre-headless)"
fi
if [ ! -e "$R/usr/lib/x86_64-linux-gnu/libfuse.so.2" ] && [ ! -e "$R/lib/x86_64-linux-gnu/libfuse.so.2" ] \
   && ! { [ -z "$R" ] && ldconfig -p 2>/dev/null | grep -q 'libfuse\.so\.2'; }; then
  say "note: mounts need libfuse 2 and fusermount (Debian: apt-get install libfuse2 fuse3)"
fi

if systemd_running; then systemctl daemon-reload; fi
cat <<EOF
install.sh: done. Next, on each host (see $prefix/README.md, "Installing on servers"):
  edit /etc/flowfs/flowfs.conf (the same file on every server and client)
  metadata server:  systemctl enable --now flowfs-metaserver
  I/O server N:     systemctl enable --now flowfs-ioserver@N
  client:           systemctl enable --now flowfs-mount     (mounts at /mnt/flowfs)
     or in fstab:   flowfs  /mnt/flowfs  fuse.flowfs  _netdev  0  0
  check:            flowfs ping && flowfs df
EOF
