package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.PriorityClass;
import dev.strata.cache.ResidencyInfo;
import dev.strata.memory.disk.DiskTier;
import dev.strata.memory.host.HostTier;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Behaviour of the KV block manager over real tiers, checked byte for byte. */
class KvBlockManagerTest {
    private static final int BT = KvRig.GEOMETRY.blockTokens();

    @Test
    void sequencesSharePrefixBlocksByReference() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(16, 8, 0, 0))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(1, 3 * BT + 2);
            KvSequence sa = m.newSequence();
            assertThat(rig.extend(sa, a, a.length)).isEqualTo(AllocationStatus.ALLOCATED);
            assertThat(sa.committedBlocks()).isEqualTo(3);
            assertThat(sa.blockCount()).isEqualTo(4);

            int[] b = a.clone();
            b[2 * BT + 1] ^= 7; // diverges inside block 2
            PrefixMatch match = m.match(b, b.length);
            assertThat(match.blocks()).isEqualTo(2);
            assertThat(match.count(BlockLocation.DEVICE)).isEqualTo(2);
            KvSequence sb = m.newSequence();
            LoadOutcome out = m.load(match, sb).get(10, TimeUnit.SECONDS);
            assertThat(out.complete()).isTrue();
            assertThat(sb.slot(0)).isEqualTo(sa.slot(0));
            assertThat(sb.slot(1)).isEqualTo(sa.slot(1));
            assertThat(m.deviceBlock(sa.key(0)).refCount()).isEqualTo(2);
            assertThat(m.deviceBlock(sa.key(2)).refCount()).isEqualTo(1);
            assertThat(m.deviceBlock(sa.key(1)).parent()).isEqualTo(sa.key(0));
            assertThat(m.deviceBlock(sa.key(0)).parent()).isEqualTo(rig.hasher.root());
            m.checkInvariants();
            rig.assertCommittedBytes(sb);

            m.release(sa);
            assertThat(m.deviceBlock(match.key(0)).refCount()).isEqualTo(1);
            assertThat(m.deviceBlock(match.key(0)).priority()).isEqualTo(PriorityClass.ACTIVE);
            assertThat(m.deviceBlock(a.length > 0 ? rig.hasher.chain(a, a.length)[2] : null).priority())
                    .isEqualTo(PriorityClass.RECENT);
            m.release(sb);
            assertThat(m.deviceBlock(match.key(0)).refCount()).isZero();
            assertThat(m.deviceBlock(match.key(0)).priority()).isEqualTo(PriorityClass.RECENT);
            assertThat(m.match(a, a.length).count(BlockLocation.DEVICE)).isEqualTo(3);
            assertThat(m.freeSlots()).isEqualTo(16 - 3); // the partial block was freed
            m.checkInvariants();
        }
    }

    @Test
    void committingAResidentKeyDedupsOntoTheResidentSlot() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(12, 8, 0, 0))) {
            KvBlockManager m = rig.manager;
            int[] t = KvRig.tokens(2, 2 * BT);
            KvSequence s1 = m.newSequence();
            rig.extend(s1, t, t.length);
            int free = m.freeSlots();
            KvSequence s2 = m.newSequence(); // computes the same prefix without matching first
            rig.extend(s2, t, t.length);
            assertThat(m.freeSlots()).as("the duplicates' slots are free again").isEqualTo(free);
            assertThat(s2.slot(0)).isEqualTo(s1.slot(0));
            assertThat(s2.slot(1)).isEqualTo(s1.slot(1));
            assertThat(m.deviceBlock(s1.key(1)).refCount()).isEqualTo(2);
            assertThat(m.stats().dedups()).isEqualTo(2);
            assertThat(m.stats().commits()).isEqualTo(2);
            m.checkInvariants();
            rig.assertCommittedBytes(s2);
            m.release(s1);
            m.release(s2);
            m.checkInvariants();
        }
    }

    @Test
    void committingWithTheMatchKeysEqualsCommittingWithTheTokens() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(12, 8, 0, 0))) {
            KvBlockManager m = rig.manager;
            int[] t = KvRig.tokens(21, 3 * BT + 1);
            KvSequence first = m.newSequence();
            rig.extend(first, t, 2 * BT); // two blocks cached
            PrefixMatch match = m.match(t, t.length);
            assertThat(match.blocks()).isEqualTo(2);
            assertThat(match.fullBlocks()).isEqualTo(3);
            KvSequence s = m.newSequence();
            assertThat(m.load(match, s).get(10, TimeUnit.SECONDS).complete()).isTrue();
            assertThat(m.allocate(s, BT + 1)).isEqualTo(AllocationStatus.ALLOCATED);
            rig.fill(s, 2, match.key(2));
            assertThat(m.commit(s, match, 3)).isEqualTo(1);
            assertThat(s.key(2)).isEqualTo(rig.hasher.chain(t, t.length)[2]);
            rig.assertCommittedBytes(s);
            int[] other = KvRig.tokens(22, 3 * BT);
            PrefixMatch foreign = m.match(other, other.length);
            KvSequence u = m.newSequence();
            rig.extend(u, t, BT);
            assertThat(m.allocate(u, BT)).isEqualTo(AllocationStatus.ALLOCATED);
            assertThatThrownBy(() -> m.commit(u, foreign, 2)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("keys other tokens");
            assertThatThrownBy(() -> m.commit(s, match, 4)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("the match keys 3");
            m.release(first);
            m.release(s);
            m.release(u);
            m.checkInvariants();
        }
    }

    @Test
    void writeBackOffloadsOnEvictionAndReloadsByteExact() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(4, 16, 0, 0))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(3, 4 * BT);
            KvSequence sa = m.newSequence();
            rig.extend(sa, a, a.length);
            rig.idle();
            assertThat(rig.store.size()).as("write-back copies nothing at commit").isZero();
            ObjectKey[] keys = rig.hasher.chain(a, a.length);
            m.release(sa);

            KvSequence sb = m.newSequence();
            int[] b = KvRig.tokens(4, 4 * BT);
            assertThat(m.allocate(sb, 4 * BT)).as("the slots are held until their copies land").isEqualTo(AllocationStatus.WAIT);
            m.checkInvariants();
            rig.idle();
            assertThat(rig.extend(sb, b, b.length)).isEqualTo(AllocationStatus.ALLOCATED);
            for (ObjectKey k : keys) {
                assertThat(rig.store.contains(k)).isTrue();
                assertThat(m.isOnDevice(k)).isFalse();
            }
            assertThat(m.stats().blocks(KvLink.OFFLOAD)).isEqualTo(4);
            assertThat(m.stats().evictions(PriorityClass.RECENT)).isEqualTo(4);
            m.release(sb);

            PrefixMatch match = m.match(a, a.length);
            assertThat(match.blocks()).isEqualTo(4);
            assertThat(match.count(BlockLocation.HOST)).isEqualTo(4);
            KvSequence sc = m.newSequence();
            LoadOutcome first = m.load(match, sc).get(10, TimeUnit.SECONDS);
            assertThat(first.slotsShort()).as("the slots still hold blocks being written back").isEqualTo(4);
            assertThat(first.loadedBlocks()).isZero();
            rig.idle();
            LoadOutcome out = m.load(match, sc).get(10, TimeUnit.SECONDS); // continues where the first stopped
            assertThat(out.complete()).isTrue();
            rig.idle();
            rig.assertCommittedBytes(sc);
            assertThat(m.stats().blocks(KvLink.RELOAD)).isEqualTo(4);
            assertThat(m.stats().bytes(KvLink.RELOAD)).isEqualTo(4 * rig.blockBytes);
            assertThat(m.stats().hits(BlockLocation.HOST)).isEqualTo(4);
            m.release(sc);
        }
    }

    @Test
    void writeThroughCopiesAtCommitAndEvictsWithoutWaiting() throws Exception {
        KvManagerConfig through = KvManagerConfig.defaults().offload(OffloadMode.WRITE_THROUGH);
        try (KvRig rig = new KvRig(KvRig.Spec.of(4, 16, 0, 0).config(through))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(5, 4 * BT);
            KvSequence sa = m.newSequence();
            rig.extend(sa, a, a.length);
            rig.idle();
            assertThat(m.stats().blocks(KvLink.OFFLOAD)).isEqualTo(4);
            for (ObjectKey k : rig.hasher.chain(a, a.length)) {
                assertThat(rig.store.contains(k)).as("copied at commit").isTrue();
                assertThat(m.isOnDevice(k)).as("and still on the device").isTrue();
            }
            m.release(sa);
            KvSequence sb = m.newSequence();
            assertThat(m.allocate(sb, 4 * BT)).as("evicting needs no copy").isEqualTo(AllocationStatus.ALLOCATED);
            assertThat(m.stats().blocks(KvLink.OFFLOAD)).isEqualTo(4);
            m.release(sb);
            KvSequence sc = m.newSequence();
            assertThat(m.load(m.match(a, a.length), sc).get(10, TimeUnit.SECONDS).loadedBlocks()).isEqualTo(4);
            rig.idle();
            rig.assertCommittedBytes(sc);
            m.release(sc);
        }
    }

    /** A test body over a rig of four slots whose store writes through to a tier that holds every write until opened. */
    private interface GatedBody {
        void run(KvRig rig, GatedTier gate) throws Exception;
    }

    /**
     * Runs {@code body} over a write-through rig of four slots whose store's first tier is a
     * {@link GatedTier}; opens the gate before the rig closes whatever the body did, so a failed
     * check does not leave copies held.
     */
    private static void withGatedWriteThrough(GatedBody body) throws Exception {
        KvManagerConfig through = KvManagerConfig.defaults().offload(OffloadMode.WRITE_THROUGH);
        GatedTier gate = new GatedTier(HostTier.slab("kvtest-gated-" + ProcessHandle.current().pid(), 16 * 512L,
                512));
        try (KvRig rig = new KvRig(KvRig.Spec.of(4, 16, 0, 0).config(through).peer(gate))) {
            try {
                body.run(rig, gate);
            } finally {
                gate.open();
            }
        } finally {
            gate.close();
        }
    }

    @Test
    void slotsWhoseCommitCopiesAreStillInFlightAskTheCallerToWaitNotToPreempt() throws Exception {
        // write-through to a slow tier: a finished request's blocks are cached but still being copied when the next one
        // needs their slots; NO_SPACE would have the scheduler preempt a running sequence for room that frees itself
        withGatedWriteThrough((rig, gate) -> {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(31, 4 * BT);
            KvSequence sa = m.newSequence();
            rig.extend(sa, a, a.length); // every slot committed; the copies wait at the gate
            m.release(sa);
            KvSequence sb = m.newSequence();
            assertThat(m.allocate(sb, BT)).as("the slots free themselves once the copies land").isEqualTo(AllocationStatus.WAIT);
            assertThat(m.stats().blocks(KvLink.OFFLOAD)).isZero();
            m.checkInvariants();
            gate.open();
            rig.idle();
            assertThat(m.allocate(sb, BT)).isEqualTo(AllocationStatus.ALLOCATED);
            assertThat(m.stats().blocks(KvLink.OFFLOAD)).isEqualTo(4);
            KvSequence sc = m.newSequence();
            assertThat(m.allocate(sc, 4 * BT)).as("held by a running sequence, a slot frees only if one is preempted")
                    .isEqualTo(AllocationStatus.NO_SPACE);
            m.release(sb);
            m.release(sc);
            m.checkInvariants();
        });
    }

    @Test
    void awaitTransferReturnsWhenACopyLandsWhenWokenWithReasonAndAtOnceWhenNothingIsInFlight() throws Exception {
        withGatedWriteThrough((rig, gate) -> {
            KvBlockManager m = rig.manager;
            long minute = TimeUnit.MINUTES.toNanos(1);
            assertThat(m.awaitTransfer(minute, () -> false)).as("nothing in flight: no wait").isZero();
            int[] a = KvRig.tokens(32, BT);
            KvSequence sa = m.newSequence();
            rig.extend(sa, a, a.length); // one block committed; its copy waits at the gate
            assertThat(m.transfersIdle()).isFalse();
            assertThat(m.awaitTransfer(TimeUnit.MILLISECONDS.toNanos(20), () -> false)).as("the copy is still held").isZero();
            AtomicBoolean request = new AtomicBoolean();
            Thread submitter = later(() -> { // as a scheduler's submit does: the reason first, then the wake
                request.set(true);
                m.wakeTransferWait();
            });
            assertThat(m.awaitTransfer(minute, request::get)).as("woken for a new request, nothing landed").isZero();
            submitter.join();
            assertThat(m.transfersIdle()).isFalse();
            Thread opener = later(gate::open);
            int applied = 0;
            for (int tries = 0; applied == 0 && tries < 100; tries++) { // one wait per task of the copy, each ended by it
                applied = m.awaitTransfer(minute, () -> false);
            }
            opener.join();
            assertThat(applied).as("the copy's completion, applied").isPositive();
            rig.idle();
            assertThat(m.stats().blocks(KvLink.OFFLOAD)).isEqualTo(1);
            m.release(sa);
        });
    }

    /** Runs {@code action} on a new thread after 50 ms. */
    private static Thread later(Runnable action) {
        return Thread.ofPlatform().start(() -> {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            action.run();
        });
    }

    @Test
    void preemptOffloadsFreesSlotsAndResumeReloads() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(8, 16, 0, 0))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(6, 3 * BT + 3);
            KvSequence s = m.newSequence();
            rig.extend(s, a, a.length);
            ObjectKey[] keys = rig.hasher.chain(a, a.length);
            m.preempt(s);
            assertThat(s.state()).isEqualTo(KvSequence.State.PREEMPTED);
            assertThat(m.freeSlots()).as("the partial block is freed at once").isEqualTo(5);
            assertThat(m.deviceBlock(keys[0]).priority()).isEqualTo(PriorityClass.IDLE);
            m.checkInvariants();
            rig.idle();
            assertThat(m.freeSlots()).as("slots freed once offloaded").isEqualTo(8);
            assertThat(m.stats().evictions(PriorityClass.IDLE)).isEqualTo(3);
            for (ObjectKey k : keys) {
                assertThat(rig.store.contains(k)).isTrue();
            }
            LoadOutcome out = m.resume(s).get(10, TimeUnit.SECONDS);
            assertThat(out.loadedBlocks()).isEqualTo(3);
            rig.idle();
            assertThat(s.state()).isEqualTo(KvSequence.State.RUNNING);
            assertThat(s.tokens()).as("the uncommitted tail is recomputed").isEqualTo(3 * BT);
            rig.assertCommittedBytes(s);
            assertThat(rig.extend(s, a, a.length)).isEqualTo(AllocationStatus.ALLOCATED);
            m.release(s);
            m.checkInvariants();
        }
    }

    @Test
    void diskBlocksComeBackThroughTheTwoStagePipeline() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(4, 2, 0, 32))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(7, 4 * BT);
            KvSequence s = m.newSequence();
            rig.extend(s, a, a.length);
            m.preempt(s);
            rig.idle();
            ObjectKey[] keys = rig.hasher.chain(a, a.length);
            PrefixMatch match = m.match(a, a.length);
            assertThat(match.blocks()).isEqualTo(4);
            assertThat(match.count(BlockLocation.DISK)).as("the small HOST tier demoted most blocks").isGreaterThanOrEqualTo(2);
            LoadOutcome out = m.resume(s).get(20, TimeUnit.SECONDS);
            assertThat(out.complete()).isTrue();
            rig.idle();
            rig.assertCommittedBytes(s);
            KvManagerStats st = m.stats();
            assertThat(st.blocks(KvLink.DISK_TO_HOST)).isEqualTo(match.count(BlockLocation.DISK));
            assertThat(st.bytes(KvLink.DISK_TO_HOST)).isEqualTo(match.count(BlockLocation.DISK) * rig.blockBytes);
            assertThat(rig.disk.stats().readOps()).isGreaterThanOrEqualTo(match.count(BlockLocation.DISK));
            assertThat(keys).hasSize(4);
            m.release(s);
        }
    }

    @Test
    void lookaheadPrefetchBringsBlocksBeforeTheyAreRequired() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(8, 16, 0, 0))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(8, 6 * BT);
            KvSequence s = m.newSequence();
            rig.extend(s, a, a.length);
            m.preempt(s);
            rig.idle();
            m.release(s);
            KvSequence r = m.newSequence();
            PrefixMatch match = m.match(a, a.length);
            assertThat(match.count(BlockLocation.HOST)).isEqualTo(6);
            assertThat(m.loadProgressively(match, r)).as("block 0 and one block of lookahead").isEqualTo(2);
            for (int i = 0; i < 6; i++) {
                rig.idle(); // one decode step's worth of time: the prefetches land
                assertThat(m.require(r, i)).as("block %d", i).isEqualTo(BlockReadiness.READY);
                assertThat(r.blockCount()).as("blocks started after requiring %d", i).isEqualTo(Math.min(6, i + 2));
            }
            assertThat(m.require(r, 6)).isEqualTo(BlockReadiness.MISSING);
            KvManagerStats st = m.stats();
            assertThat(st.prefetchHits()).isEqualTo(5);
            assertThat(st.prefetchLate()).isZero();
            assertThat(st.blocks(KvLink.PREFETCH)).isEqualTo(5);
            assertThat(st.blocks(KvLink.RELOAD)).isEqualTo(1);
            rig.assertCommittedBytes(r);
            m.release(r);
        }
    }

    @Test
    void diskResidentBlocksArePrefetchedTwoAhead() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(8, 0, 0, 32))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(9, 5 * BT);
            KvSequence s = m.newSequence();
            rig.extend(s, a, a.length);
            m.preempt(s);
            rig.idle();
            m.release(s);
            PrefixMatch match = m.match(a, a.length);
            assertThat(match.count(BlockLocation.DISK)).isEqualTo(5);
            KvSequence r = m.newSequence();
            assertThat(m.loadProgressively(match, r)).as("block 0 and two blocks of lookahead").isEqualTo(3);
            rig.idle();
            assertThat(m.require(r, 0)).isEqualTo(BlockReadiness.READY);
            assertThat(r.blockCount()).isEqualTo(3);
            assertThat(m.require(r, 1)).isEqualTo(BlockReadiness.READY);
            assertThat(r.blockCount()).isEqualTo(4);
            rig.idle();
            for (int i = 2; i < 5; i++) {
                assertThat(m.require(r, i)).isEqualTo(BlockReadiness.READY);
                rig.idle();
            }
            assertThat(m.stats().prefetchHits()).isEqualTo(4);
            assertThat(m.stats().blocks(KvLink.DISK_TO_HOST)).isEqualTo(5);
            rig.assertCommittedBytes(r);
            m.release(r);
        }
    }

    @Test
    void diskAdmitsOnlyBlocksUsedTwice() throws Exception {
        SeenTwiceAdmission filter = new SeenTwiceAdmission(1024);
        try (KvRig rig = new KvRig(KvRig.Spec.of(4, 1, 0, 32).admission(filter))) {
            KvBlockManager m = rig.manager;
            int[] once = KvRig.tokens(10, 2 * BT);
            int[] twice = KvRig.tokens(11, 2 * BT);
            KvSequence s1 = m.newSequence();
            rig.extend(s1, once, once.length);
            KvSequence s2 = m.newSequence();
            rig.extend(s2, twice, twice.length);
            m.release(s1);
            m.release(s2);
            KvSequence again = m.newSequence(); // a second use of "twice"
            assertThat(m.load(m.match(twice, twice.length), again).get(10, TimeUnit.SECONDS).complete()).isTrue();
            m.preempt(again);
            KvSequence filler = m.newSequence();
            rig.extend(filler, KvRig.tokens(12, 4 * BT), 4 * BT); // pushes every cached block off the device
            rig.idle();
            ObjectKey[] onceKeys = rig.hasher.chain(once, once.length);
            ObjectKey[] twiceKeys = rig.hasher.chain(twice, twice.length);
            for (ObjectKey k : twiceKeys) {
                assertThat(rig.store.contains(k)).as("a block used twice is kept (HOST or DISK)").isTrue();
            }
            int onceKept = 0;
            for (ObjectKey k : onceKeys) {
                onceKept += rig.store.contains(k) ? 1 : 0;
            }
            assertThat(onceKept).as("at most the one HOST block of those used once survives").isLessThanOrEqualTo(1);
            assertThat(filter.refused()).isGreaterThanOrEqualTo(1);
            assertThat(m.stats().drops()).as("refused blocks are dropped and forgotten").isEqualTo(2 - onceKept);
            for (ObjectKey k : onceKeys) {
                assertThat(m.offloadedKeys().contains(k)).as("the manager forgot what the store dropped").isEqualTo(rig.store.contains(k));
            }
            assertThat(m.offloadedKeys()).contains(twiceKeys);
            int onDisk = 0;
            for (ObjectKey k : twiceKeys) {
                for (ResidencyInfo r : rig.store.residencies(k)) {
                    onDisk += r.tierName().equals(rig.disk.name()) ? 1 : 0;
                }
            }
            assertThat(onDisk).isGreaterThanOrEqualTo(1);
            assertThat(filter.admitted()).isGreaterThanOrEqualTo(onDisk);
            m.release(filler);
            m.release(again);
            m.checkInvariants();
        }
    }

    @Test
    void aCorruptDiskCopyFailsOnlyThatBlockAndIsTreatedAsMissing() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(6, 1, 0, 32))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(13, 4 * BT);
            KvSequence s = m.newSequence();
            ObjectKey[] keys = rig.hasher.chain(a, a.length);
            LoadOutcome out = resumeWithThirdBlockCorruptOnDisk(rig, s, a);
            assertThat(out.loadedBlocks()).isEqualTo(2);
            assertThat(out.failures()).hasSize(1);
            BlockLoadFailure f = out.failures().getFirst();
            assertThat(f.blockIndex()).isEqualTo(2);
            assertThat(f.key()).isEqualTo(keys[2]);
            assertThat(f.source()).isEqualTo(BlockLocation.DISK);
            assertThat(f.reason()).contains("corrupt").contains(keys[2].toString()).contains(rig.disk.name());
            rig.idle();
            assertThat(s.committedBlocks()).as("the prefix ends before the failed block").isEqualTo(2);
            assertThat(s.blockCount()).isEqualTo(2);
            rig.assertCommittedBytes(s);
            assertThat(rig.store.contains(keys[2])).as("the unreadable copy is removed").isFalse();
            assertThat(m.offloadedKeys()).doesNotContain(keys[2]);
            assertThat(m.stats().failedLoads()).isEqualTo(1);
            assertThat(m.isOnDevice(keys[3])).as("a later block that loaded stays cached").isTrue();
            assertThat(m.match(a, a.length).blocks()).isEqualTo(2);
            assertThat(rig.extend(s, a, a.length)).isEqualTo(AllocationStatus.ALLOCATED);
            assertThat(s.committedBlocks()).isEqualTo(4);
            rig.assertCommittedBytes(s);
            m.release(s);
            m.checkInvariants();
        }
    }

    /**
     * Fills {@code s} with {@code a} (four blocks), preempts it to DISK, flips a byte of block 2's
     * disk copy and resumes: the outcome of that resume.
     */
    private static LoadOutcome resumeWithThirdBlockCorruptOnDisk(KvRig rig, KvSequence s, int[] a) throws Exception {
        KvBlockManager m = rig.manager;
        rig.extend(s, a, a.length);
        m.preempt(s);
        rig.idle();
        ObjectKey[] keys = rig.hasher.chain(a, a.length);
        ResidencyInfo onDisk = rig.store.residencies(keys[2]).getFirst();
        assertThat(onDisk.tierName()).isEqualTo(rig.disk.name());
        DiskTier.Location at = rig.disk.location(onDisk.handle());
        try (FileChannel ch = FileChannel.open(at.file(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, at.payloadOffset() + 17);
            one.put(0, (byte) (one.get(0) ^ 0x40)).rewind();
            ch.write(one, at.payloadOffset() + 17);
            ch.force(true);
        }
        return m.resume(s).get(20, TimeUnit.SECONDS);
    }

    @Test
    void allocateToCountsFromTheSequenceAsAFailedLoadLeftIt() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(6, 1, 0, 32))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(13, 4 * BT);
            KvSequence s = m.newSequence();
            LoadOutcome out = resumeWithThirdBlockCorruptOnDisk(rig, s, a);
            assertThat(out.failures()).hasSize(1);
            // the engine has not called the manager since the load completed: the sequence it saw
            // still holds four blocks, the failure is applied by the next call
            assertThat(m.allocateTo(s, a.length)).isEqualTo(AllocationStatus.ALLOCATED);
            assertThat(s.blockCount()).as("slots for every block of the prompt, the failed one taken again").isEqualTo(4);
            assertThat(s.committedBlocks()).isEqualTo(2);
            assertThatThrownBy(() -> m.allocateTo(s, a.length - BT)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("holds " + a.length + " tokens");
            m.release(s);
            m.checkInvariants();
        }
    }

    @Test
    void blocksAreSharedAcrossManagersThroughTheSharedPool() throws Exception {
        InMemorySharedBlockStore pool = new InMemorySharedBlockStore(64);
        try (KvRig one = new KvRig(KvRig.Spec.of(8, 8, 0, 0).shared(pool));
             KvRig two = new KvRig(KvRig.Spec.of(8, 8, 0, 0).shared(pool))) {
            int[] a = KvRig.tokens(14, 3 * BT + 1);
            KvSequence s = one.manager.newSequence();
            one.extend(s, a, a.length);
            one.idle();
            assertThat(pool.publishes).as("published at commit").isEqualTo(3);
            assertThat(one.manager.stats().blocks(KvLink.SHARED_PUBLISH)).isEqualTo(3);

            PrefixMatch match = two.manager.match(a, a.length);
            assertThat(match.blocks()).isEqualTo(3);
            assertThat(match.count(BlockLocation.SHARED)).isEqualTo(3);
            KvSequence t = two.manager.newSequence();
            assertThat(two.manager.load(match, t).get(10, TimeUnit.SECONDS).complete()).isTrue();
            two.idle();
            two.assertCommittedBytes(t);
            assertThat(two.manager.stats().hits(BlockLocation.SHARED)).isEqualTo(3);
            assertThat(two.manager.stats().blocks(KvLink.SHARED_READ)).isEqualTo(3);
            one.manager.release(s);
            two.manager.release(t);
        }
    }

    @Test
    void publishingOnEvictionWaitsUntilTheBlockLeavesTheDevice() throws Exception {
        InMemorySharedBlockStore pool = new InMemorySharedBlockStore(64);
        KvManagerConfig onEviction = KvManagerConfig.defaults().sharedPublish(SharedPublishMode.ON_EVICTION);
        try (KvRig rig = new KvRig(KvRig.Spec.of(2, 8, 0, 0).config(onEviction).shared(pool))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(15, 2 * BT);
            KvSequence s = m.newSequence();
            rig.extend(s, a, a.length);
            rig.idle();
            assertThat(pool.publishes).isZero();
            m.release(s);
            KvSequence t = m.newSequence();
            rig.extend(t, KvRig.tokens(16, 2 * BT), 2 * BT);
            rig.idle();
            for (ObjectKey k : rig.hasher.chain(a, a.length)) {
                assertThat(pool.contains(k)).isTrue();
            }
            m.release(t);
        }
    }

    @Test
    void statisticsRenderAsPrometheusText() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(4, 8, 0, 0))) {
            int[] a = KvRig.tokens(17, 2 * BT);
            KvSequence s = rig.manager.newSequence();
            rig.extend(s, a, a.length);
            rig.manager.match(a, a.length);
            String text = rig.manager.stats().toPrometheus();
            assertThat(text).contains("# TYPE strata_kv_hits_total counter")
                    .contains("strata_kv_hits_total{location=\"device\"} 2")
                    .contains("strata_kv_link_bytes_total{link=\"offload\"} 0")
                    .contains("strata_kv_evictions_total{class=\"idle\"} 0")
                    .contains("strata_kv_failed_stagings_total 0")
                    .contains("strata_kv_slots 4");
            rig.manager.release(s);
        }
    }

    @Test
    void misuseIsRefusedWithTheOffendingValues() throws Exception {
        try (KvRig rig = new KvRig(KvRig.Spec.of(4, 8, 0, 0))) {
            KvBlockManager m = rig.manager;
            KvSequence s = m.newSequence();
            int[] a = KvRig.tokens(18, 3 * BT);
            assertThatThrownBy(() -> m.commit(s, a, a.length)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("3 full blocks").hasMessageContaining("slots for 0 blocks");
            rig.extend(s, a, BT);
            assertThat(m.allocate(s, 1)).isEqualTo(AllocationStatus.ALLOCATED); // a block being written
            assertThatThrownBy(() -> m.load(m.match(a, a.length), s)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("already holds 2 blocks");
            m.release(s);
            assertThatThrownBy(() -> m.release(s)).isInstanceOf(IllegalStateException.class).hasMessageContaining("already released");
            KvSequence busy = m.newSequence();
            assertThat(m.allocate(busy, 4 * BT)).as("the cached block must be written back first").isEqualTo(AllocationStatus.WAIT);
            rig.idle();
            assertThat(m.allocate(busy, 4 * BT)).isEqualTo(AllocationStatus.ALLOCATED);
            KvSequence starved = m.newSequence();
            assertThat(m.allocate(starved, 1)).isEqualTo(AllocationStatus.NO_SPACE);
            m.release(busy);
            m.release(starved);
        }
    }
}
