package org.flowfs.meta;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.flowfs.common.Counters;
import org.flowfs.common.Errno;
import org.flowfs.common.FileType;
import org.flowfs.common.FsException;
import org.flowfs.common.Handle;
import org.flowfs.common.rpc.Access;
import org.flowfs.common.rpc.OpSpec;
import org.flowfs.common.rpc.OpTable;
import org.flowfs.common.wire.Message;
import org.flowfs.common.wire.MetaOp.CreateReq;
import org.flowfs.common.wire.MetaOp.EntryResp;
import org.flowfs.common.wire.MetaOp.GetattrReq;
import org.flowfs.common.wire.MetaOp.RemoveReq;
import org.flowfs.common.wire.MetaOp.RemoveResp;
import org.flowfs.common.wire.MetaOp.RenameReq;
import org.flowfs.common.wire.MetaOp.RenameResp;
import org.flowfs.common.wire.Req;
import org.flowfs.meta.DirLeases.Lease;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The gate in front of the metadata operations: which requests wait for a lease, and when a grant
 * may read its directory ({@link LeaseGate#quiet}). The handlers are stand-ins that answer when
 * the test says, so a change can be held "in flight" between the gate and the store.
 */
class LeaseGateTest {
  private final MetadataStore store = new MemoryMetadataStore();
  private final DirLeases leases = new DirLeases(Duration.ofSeconds(30), System::nanoTime,
      (delayNs, task) -> { }, (lease, unused) -> { }, new Counters());
  private final LeaseGate gate = new LeaseGate(leases, store);
  /** The answers the stand-in handlers still owe, in the order the requests reached them. */
  private final List<CompletableFuture<Message>> owed = new ArrayList<>();
  private OpTable gated;
  private Handle d;
  private Handle sub;

  @BeforeEach
  void setUp() {
    d = store.create(Handle.ROOT, "d", dir(), 1).join().handle();
    sub = store.create(d, "sub", dir(), 2).join().handle();
    OpTable ops = new OpTable();
    standIn(ops, CreateReq.class, Access.MODIFY);
    standIn(ops, RemoveReq.class, Access.MODIFY);
    standIn(ops, RenameReq.class, Access.MODIFY);
    standIn(ops, GetattrReq.class, Access.READ_ONLY);
    gated = gate.guard(ops);
  }

  private static MetadataStore.NewObject dir() {
    return new MetadataStore.NewObject(FileType.DIRECTORY, 0755, 0, 0, 0, null, null);
  }

  /** A handler that owes its answer until the test pays it; runs parked requests in place. */
  @SuppressWarnings("unchecked")
  private <Q extends Req<R>, R extends Message> void standIn(OpTable ops, Class<Q> type, Access access) {
    ops.add(new OpSpec<Q, R>(type, access, Runnable::run, (q, ctx) -> {
      if (q instanceof CreateReq c && c.name().equals("throws")) {
        throw new FsException(Errno.EIO, "refused at once");
      }
      CompletableFuture<Message> answer = new CompletableFuture<>();
      owed.add(answer);
      return (CompletionStage<R>) answer;
    }));
  }

  @SuppressWarnings("unchecked")
  private <R extends Message> CompletableFuture<R> send(Req<R> q) throws Exception {
    OpSpec<Req<R>, R> spec = (OpSpec<Req<R>, R>) gated.get(q.getClass());
    return spec.handler().handle(q, null).toCompletableFuture();
  }

  private static CreateReq create(Handle parent, String name) {
    return new CreateReq(parent, name, FileType.REGULAR, 0644, 0, 0, 0, null, 0);
  }

  private void pay(int i) {
    owed.get(i).complete(new EntryResp(null));
  }

  @Test
  void aChangeLetThroughBeforeTheLease_holdsTheGrantsReadUntilAnswered() throws Exception {
    assertTrue(gate.quiet(d).isDone(), "nothing in flight");
    CompletableFuture<EntryResp> early = send(create(d, "a"));
    assertEquals(1, owed.size(), "no lease yet: it went through");
    Lease l = leases.grant(d);
    assertNotNull(l);
    CompletableFuture<Void> quiet = gate.quiet(d);
    assertFalse(quiet.isDone(), "the create may not have reached the store yet");
    CompletableFuture<EntryResp> late = send(create(d, "b"));
    assertEquals(1, owed.size(), "arrived after the lease: parked, and not counted");
    assertFalse(quiet.isDone());
    pay(0);
    assertTrue(early.isDone());
    assertTrue(quiet.isDone(), "the last change let through is answered");
    assertTrue(gate.quiet(d).isDone());
    leases.end(l);
    assertEquals(2, owed.size(), "the parked create runs once the lease ended");
    assertFalse(late.isDone());
    pay(1);
    assertTrue(late.isDone());
  }

  @Test
  void aParkedChangeThatRuns_countsAgain_forTheNextGrant() throws Exception {
    Lease first = leases.grant(d);
    CompletableFuture<EntryResp> parked = send(create(d, "a"));
    assertTrue(gate.quiet(d).isDone(), "a parked change holds no grant back");
    leases.end(first);
    assertEquals(1, owed.size());
    Lease second = leases.grant(d);
    assertNotNull(second);
    CompletableFuture<Void> quiet = gate.quiet(d);
    assertFalse(quiet.isDone(), "running now, not answered");
    pay(0);
    assertTrue(parked.isDone());
    assertTrue(quiet.isDone());
  }

  @Test
  void readsAndRefusedChanges_holdNothingBack_otherDirectoriesNeither() throws Exception {
    send(new GetattrReq(d));
    assertEquals(1, owed.size());
    assertTrue(gate.quiet(d).isDone(), "a read changes nothing");
    CompletableFuture<EntryResp> other = send(create(sub, "x"));
    assertEquals(2, owed.size());
    assertTrue(gate.quiet(d).isDone(), "a change of another directory");
    assertFalse(gate.quiet(sub).isDone());
    assertThrows(FsException.class, () -> send(create(d, "throws")));
    assertTrue(gate.quiet(d).isDone(), "a handler that threw is done");
    pay(1);
    assertTrue(other.isDone());
    assertTrue(gate.quiet(sub).isDone());
  }

  @Test
  void anRmdirOrRenameOfTheDirectory_inFlight_holdsItsGrantBack() throws Exception {
    CompletableFuture<RemoveResp> rmdir = send(new RemoveReq(d, "sub", true));
    assertFalse(gate.quiet(sub).isDone(), "removing it");
    CompletableFuture<RenameResp> rename = send(new RenameReq(Handle.ROOT, "d", Handle.ROOT, "e", 0));
    assertFalse(gate.quiet(d).isDone(), "moving it");
    pay(0);
    assertTrue(rmdir.isDone());
    assertTrue(gate.quiet(sub).isDone());
    assertFalse(gate.quiet(d).isDone());
    pay(1);
    assertTrue(rename.isDone());
    assertTrue(gate.quiet(d).isDone());
  }

  @Test
  void anRmdirOfALeasedDirectory_parksAndRecalls() throws Exception {
    Lease l = leases.grant(sub);
    CompletableFuture<RemoveResp> rmdir = send(new RemoveReq(d, "sub", true));
    assertTrue(owed.isEmpty(), "parked");
    assertTrue(leases.recalled(l));
    assertTrue(gate.quiet(d).isDone(), "a parked rmdir holds no grant on its parent back");
    leases.end(l);
    assertEquals(1, owed.size());
    pay(0);
    assertTrue(rmdir.isDone());
  }
}
