package org.flowfs.it;

import org.junit.jupiter.api.Test;

/**
 * POSIX ACLs on the mount ({@code setfacl}, {@code getfacl}): the kernel checks them
 * ({@code FUSE_POSIX_ACL}), the metadata server keeps them and the mode in step and passes a
 * directory's default ACL on to what is made in it, in place of the umask. The same script on the
 * local disk must print the same.
 */
class PosixAclTest extends PosixSuite {
  /** getfacl of a file on one line, without the header and with blanks for tabs. */
  private static final String ACL = "acl() { getfacl -cp \"$@\" | tr '\\t\\n' '  ' | sed 's/ *$//'; echo; }\n";

  @Test
  void accessAcls_grantAndMask_andTheModeFollows() throws Exception {
    assumeRoot();
    posix("access", ACL + """
        echo data > f; chmod 600 f
        setfacl -m u:12003:rw f; stat -c %A f; acl f
        t bob sh -c 'echo more >> f && cat f'
        t alice cat f
        chmod 640 f; stat -c %A f; acl f
        t bob cat f
        t bob sh -c 'echo no >> f'
        setfacl -m m::rwx f; stat -c %A f
        setfacl -b f; stat -c %A f; acl f
        setfacl -m u::rw,g::r,o::- f; stat -c %A f; t getfattr -n system.posix_acl_access f
        alice sh -c 'echo hi > g; chmod 600 g; setfacl -m g:12003:r g'
        t bob cat g
        t bob setfacl -m u:12003:rwx g
        t setfacl -d -m u:1:r f
        touch s; chown 12001:12003 s; chmod 2775 s; alice setfacl -m u:12003:r s; stat -c %a s
        alice sh -c 'touch s2; chgrp 12002 s2; chmod 2775 s2; setfacl -m u:12003:r s2; stat -c %a s2'
        """, """
        -rw-rw----
        user::rw- user:12003:rw- group::--- mask::rw- other::---
        bob sh -c echo more >> f && cat f: data more
        alice cat f: cat: f: Permission denied
        -rw-r-----
        user::rw- user:12003:rw- #effective:r-- group::--- mask::r-- other::---
        bob cat f: data more
        bob sh -c echo no >> f: sh: 1: cannot create f: Permission denied
        -rw-rwx---
        -rw-------
        user::rw- group::--- other::---
        -rw-r-----
        getfattr -n system.posix_acl_access f: f: system.posix_acl_access: No such attribute
        bob cat g: hi
        bob setfacl -m u:12003:rwx g: setfacl: g: Operation not permitted
        setfacl -d -m u:1:r f: setfacl: f: Only directories can have default ACLs
        775
        2775
        """);
  }

  @Test
  void defaultAcls_replaceTheUmask_andPassOnToSubdirectories() throws Exception {
    // 40 files in a row: more than enough for the mount to ask for a lease on the directory,
    // under which it would make them itself (a directory with a default ACL is never leased)
    posix("default", ACL + """
        mkdir d; setfacl -d -m u:12003:rwx,g::rx,o::- d; setfacl -d -m m::rwx d
        (umask 077; touch d/file; mkdir d/sub; mknod d/fifo p; for i in $(seq 40); do echo $i > d/n$i; done)
        stat -c '%A %n' d/file d/sub d/fifo d/n40
        ls -l d | grep -c '^-rw-rw----+'
        acl d/file
        acl -d d/sub
        acl d/sub
        (umask 077; touch d/sub/deeper); acl d/sub/deeper
        ln -s file d/link; stat -c %A d/link
        mkdir e; (umask 027; touch e/g; mkdir e/h; echo x > e/i); stat -c '%a %n' e/g e/h e/i
        setfacl -k d; (umask 077; touch d/after); stat -c %a d/after
        cp -a d d2; acl d2/file
        tar --acls -cf x.tar d; mkdir x; tar --acls -xf x.tar -C x; acl x/d/sub/deeper
        """, """
        -rw-rw---- d/file
        drwxrwx--- d/sub
        prw-rw---- d/fifo
        -rw-rw---- d/n40
        41
        user::rw- user:12003:rwx #effective:rw- group::r-x #effective:r-- mask::rw- other::---
        user::rwx user:12003:rwx group::r-x mask::rwx other::---
        user::rwx user:12003:rwx group::r-x mask::rwx other::--- default:user::rwx default:user:12003:rwx default:group::r-x default:mask::rwx default:other::---
        user::rw- user:12003:rwx #effective:rw- group::r-x #effective:r-- mask::rw- other::---
        lrwxrwxrwx
        640 e/g
        750 e/h
        640 e/i
        600
        user::rw- user:12003:rwx #effective:rw- group::r-x #effective:r-- mask::rw- other::---
        user::rw- user:12003:rwx #effective:rw- group::r-x #effective:r-- mask::rw- other::---
        """);
  }
}
