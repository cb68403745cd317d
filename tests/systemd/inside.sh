#!/usr/bin/env bash
# Runs inside the container booted by boot-test.sh, as the oneshot unit flowfs-boot-test.service
# (After=multi-user.target, SuccessAction=exit, FailureAction=exit): checks the FlowFS units the
# boot started, writes one line per check to /results/log ("ok ..." or "FAIL ..."), the output of
# failed commands to /results/detail, and exits with the number of failures, which becomes the
# container's (and so systemd-nspawn's) exit code.
set -u
R=/results
: > "$R/log"
: > "$R/detail"
fails=0
servers=(flowfs-metaserver flowfs-ioserver@0 flowfs-ioserver@1 flowfs-ioserver@2 flowfs-ioserver@3)

ok() { echo "ok $*" >> "$R/log"; }
bad() { echo "FAIL $*" >> "$R/log"; fails=$((fails + 1)); }
# check DESCRIPTION CMD...: one check; a failed command's output goes to /results/detail
check() {
  local what=$1 out rc
  shift
  out=$(timeout 120 bash -c '"$@"' check "$@" 2>&1); rc=$?
  if [ $rc -eq 0 ]; then ok "$what"; else bad "$what (exit $rc)"; printf '=== %s: %s\n%s\n' "$what" "$*" "$out" >> "$R/detail"; fi
  return $rc
}
# until SECONDS CMD...: CMD succeeds within SECONDS
until_ok() {
  local end=$((SECONDS + $1))
  shift
  while [ $SECONDS -lt $end ]; do "$@" > /dev/null 2>&1 && return 0; sleep 0.2; done
  "$@"
}
mounted() { [ "$(findmnt -n -o FSTYPE --mountpoint "$1" 2>/dev/null)" = fuse.flowfs ]; }
unmounted() { ! mountpoint -q "$1"; }
active() { systemctl is-active --quiet "$1"; }
clean_stop() {  # the unit is inactive, its last run succeeded and its main process exited cleanly
  [ "$(systemctl show -p ActiveState --value "$1")" = inactive ] && [ "$(systemctl show -p Result --value "$1")" = success ]
}
client_gone() { ! pgrep -f "flowfs.cli.Main mount --config /etc/flowfs/flowfs.conf $1\$" > /dev/null; }
new_client() {  # flowfs-mount runs again, with a main process other than $1, and its mount is there
  local pid
  pid=$(systemctl show -p MainPID --value flowfs-mount)
  [ "$pid" != 0 ] && [ "$pid" != "$1" ] && active flowfs-mount && mounted /mnt/flowfs
}
# the checks run in a child bash (under timeout), which gets these functions
export -f until_ok mounted unmounted active clean_stop client_gone new_client

# --- what the boot started -------------------------------------------------------------------------
for u in "${servers[@]}" flowfs-mount; do
  check "$u is active after boot" until_ok 60 active "$u"
done
check "/mnt/flowfs is a fuse.flowfs mount" mounted /mnt/flowfs
check "flowfs-mount reported readiness through sd_notify" \
  bash -c 'systemctl show -p StatusText --value flowfs-mount | grep -q "ready"'
check "the servers run as the user flowfs" \
  bash -c '[ "$(systemctl show -p MainPID --value flowfs-metaserver | xargs ps -o user= -p)" = flowfs ]'
check "flowfs ping: every server answers" flowfs ping
check "flowfs df" flowfs df

# --- data through the mount ------------------------------------------------------------------------
head -c 24M /dev/urandom > /root/ref1
head -c 9M /dev/urandom > /root/ref2
check "a 24 MiB file written through the mount" cp /root/ref1 /mnt/flowfs/file1
check "it reads back" cmp /root/ref1 /mnt/flowfs/file1
check "flowfs stat shows its 4 datafiles" bash -c 'flowfs stat --json /mnt/flowfs/file1 | grep -q "\"servers\":4"'

mount_pid=$(systemctl show -p MainPID --value flowfs-mount)
check "systemctl restart flowfs-ioserver@2" systemctl restart flowfs-ioserver@2
check "flowfs-ioserver@2 is active again" active flowfs-ioserver@2
check "the mount survived it (same client process)" \
  bash -c "[ \"\$(systemctl show -p MainPID --value flowfs-mount)\" = $mount_pid ] && systemctl is-active --quiet flowfs-mount"
check "the file is intact after the restart" cmp /root/ref1 /mnt/flowfs/file1
check "a new file written after the restart" cp /root/ref2 /mnt/flowfs/file2
check "it reads back" cmp /root/ref2 /mnt/flowfs/file2
check "ioserver 2 still holds its part of the file" \
  bash -c 'flowfs stat --json /mnt/flowfs/file1 | grep -Eq "\"server\":2,[^}]*\"bytes\":[1-9]"'

# a client that dies: systemd restarts it (Restart=on-failure), and the new one replaces the dead mount
check "kill -9 of the mount's client" systemctl kill -s KILL flowfs-mount
check "systemd restarts it and the mount is back" until_ok 60 new_client "$mount_pid"
check "the files read back through the new client" bash -c 'cmp /root/ref1 /mnt/flowfs/file1 && cmp /root/ref2 /mnt/flowfs/file2'
# the mount (root) and the I/O servers (user flowfs) on one machine: the servers make the files of
# shared memory the mount maps, and the files' bytes (read cold by the new client) came through them
check "the mount shares memory with the I/O servers" bash -c 'getfattr -n flowfs.stats --only-values /mnt/flowfs > /tmp/shm.json &&
  grep -Eq "\"shm.received-bytes\": *[1-9][0-9]{6}" /tmp/shm.json && grep -Eq "\"shm.attached\": *[1-9]" /tmp/shm.json &&
  ! grep -Eq "\"shm.refused\": *[1-9]" /tmp/shm.json'

check "flowfs setstripe" bash -c 'mkdir -p /mnt/flowfs/wide && flowfs setstripe /mnt/flowfs/wide --strip-size 1MiB --servers 2'
check "a new file in that directory follows it" bash -c 'cp /root/ref2 /mnt/flowfs/wide/f &&
  flowfs stat --json /mnt/flowfs/wide/f > /tmp/wide.json && grep -q "\"strip_size\":1048576," /tmp/wide.json &&
  grep -q "\"servers\":2," /tmp/wide.json'
check "flowfs stats shows the mount's and the servers' counters" \
  bash -c 'flowfs stats --json | grep -q "\"path\":\"/mnt/flowfs\""'

# --- fstab and mount.fuse.flowfs (a second client: reads come from the servers, not the page cache) -
mkdir -p /mnt/x /mnt/y
echo "flowfs  /mnt/x  fuse.flowfs  _netdev,noauto  0  0" >> /etc/fstab
systemctl daemon-reload
check "mount /mnt/x (an fstab line with _netdev)" mount /mnt/x
check "/mnt/x is mounted" mounted /mnt/x
check "the files read back through it" bash -c 'cmp /root/ref1 /mnt/x/file1 && cmp /root/ref2 /mnt/x/file2'
check "umount /mnt/x" umount /mnt/x
check "/mnt/x is unmounted and its client exited" bash -c 'unmounted /mnt/x && until_ok 20 client_gone /mnt/x'
check "systemctl start mnt-x.mount (the unit systemd makes of the fstab line)" systemctl start mnt-x.mount
check "it is mounted and answers" bash -c 'cmp /root/ref2 /mnt/x/file2'
check "systemctl stop mnt-x.mount" systemctl stop mnt-x.mount
check "/mnt/x is unmounted" unmounted /mnt/x
check "mount -t fuse.flowfs /etc/flowfs/flowfs.conf /mnt/y" mount -t fuse.flowfs /etc/flowfs/flowfs.conf /mnt/y
check "it answers" cmp /root/ref1 /mnt/y/file1
check "umount /mnt/y" bash -c 'umount /mnt/y && until_ok 20 client_gone /mnt/y'

# --- stop everything; start it again; the files are still there ------------------------------------
check "systemctl stop of every FlowFS unit" systemctl stop flowfs-mount flowfs-metaserver 'flowfs-ioserver@*'
check "/mnt/flowfs is unmounted" unmounted /mnt/flowfs
for u in flowfs-mount "${servers[@]}"; do
  check "$u stopped cleanly" clean_stop "$u"
done
check "no FlowFS process is left" bash -c '! pgrep -f "[o]rg.flowfs.cli.Main"'
check "systemctl start of every FlowFS unit" systemctl start "${servers[@]}" flowfs-mount
check "/mnt/flowfs is mounted again" mounted /mnt/flowfs
check "the files survived the restart of everything" bash -c 'cmp /root/ref1 /mnt/flowfs/file1 && cmp /root/ref2 /mnt/flowfs/wide/f'
check "systemctl stop again" systemctl stop flowfs-mount flowfs-metaserver 'flowfs-ioserver@*'
check "/mnt/flowfs is unmounted again" unmounted /mnt/flowfs

# --- the journal -------------------------------------------------------------------------------------
check "the journal has the metadata server's start line" \
  bash -c 'journalctl -q -o cat -u flowfs-metaserver | grep -q "metaserver started"'
for i in 0 1 2 3; do
  check "the journal has I/O server $i's start line" \
    bash -c "journalctl -q -o cat -u flowfs-ioserver@$i | grep -q 'ioserver $i started'"
done
check "the journal has the mount's line" bash -c 'journalctl -q -o cat -u flowfs-mount | grep -q "mounted "'
check "the journal has mount.fuse.flowfs's client output" bash -c 'journalctl -q -o cat -t flowfs-mount | grep -q "/mnt/x"'

echo "$fails failures" >> "$R/log"
touch "$R/done"
journalctl --sync 2>/dev/null || true
exit "$fails"
