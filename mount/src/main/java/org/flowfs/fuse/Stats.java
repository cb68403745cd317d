package org.flowfs.fuse;

import jnr.ffi.Runtime;
import org.flowfs.client.FsStat;
import org.flowfs.common.Attr;
import ru.serce.jnrfuse.struct.FileStat;
import ru.serce.jnrfuse.struct.Statvfs;

/** Fills FUSE's {@code struct stat} and {@code struct statvfs} from FlowFS values. */
final class Stats {
  static final int BLOCK = 4096;

  private Stats() {}

  /** Times before 1970 are negative: whole seconds round down, so tv_nsec stays in [0, 1e9). */
  static void fill(FileStat st, Attr a) {
    st.st_ino.set(a.handle().id());
    st.st_mode.set(a.stMode());
    st.st_nlink.set(a.nlink());
    st.st_uid.set(a.uid());
    st.st_gid.set(a.gid());
    st.st_rdev.set(a.rdev());
    st.st_size.set(a.size());
    st.st_blksize.set(64 * 1024);
    st.st_blocks.set((a.size() + 511) / 512);
    st.st_atim.tv_sec.set(Math.floorDiv(a.atimeNs(), 1_000_000_000L));
    st.st_atim.tv_nsec.set(Math.floorMod(a.atimeNs(), 1_000_000_000L));
    st.st_mtim.tv_sec.set(Math.floorDiv(a.mtimeNs(), 1_000_000_000L));
    st.st_mtim.tv_nsec.set(Math.floorMod(a.mtimeNs(), 1_000_000_000L));
    st.st_ctim.tv_sec.set(Math.floorDiv(a.ctimeNs(), 1_000_000_000L));
    st.st_ctim.tv_nsec.set(Math.floorMod(a.ctimeNs(), 1_000_000_000L));
  }

  /** A stat holding only what readdir reports: inode number and type. */
  static FileStat entry(Runtime rt) {
    return new FileStat(rt);
  }

  static void fill(Statvfs s, FsStat f) {
    s.f_bsize.set(BLOCK);
    s.f_frsize.set(BLOCK);
    s.f_blocks.set(f.totalBytes() / BLOCK);
    s.f_bfree.set(f.freeBytes() / BLOCK);
    s.f_bavail.set(f.availableBytes() / BLOCK);
    s.f_files.set(f.files());
    s.f_ffree.set(f.freeFiles());
    s.f_favail.set(f.freeFiles());
    s.f_namemax.set(255);
  }
}
