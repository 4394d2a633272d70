package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Staging a preempted sequence's stored blocks ahead of its resume
 * ({@link KvBlockManager#stageForResume}) over real HOST and DISK tiers: staged blocks are taken
 * as prefetch hits without touching the store again, a resume after partial staging loads the rest
 * the normal way, a release or resume while reads are in flight gives every staging buffer back
 * exactly once, and every block holds its key's bytes.
 */
class KvResumeStagingTest {
    private static final int BT = KvRig.GEOMETRY.blockTokens();

    /** Write-through, so that a preemption evicts the sequence's blocks at once (their copies are in the store). */
    private static KvRig.Spec spec(int resumeStagingBlocks) {
        return KvRig.Spec.of(4, 2, 0, 32).config(KvManagerConfig.defaults().offload(OffloadMode.WRITE_THROUGH)
                .resumeStagingBlocks(resumeStagingBlocks));
    }

    /** A sequence of {@code blocks} committed blocks, preempted, its blocks evicted from the device and landed in the store. */
    private static KvSequence preempted(KvRig rig, long seed, int blocks) {
        KvBlockManager m = rig.manager;
        int[] a = KvRig.tokens(seed, blocks * BT);
        KvSequence s = m.newSequence();
        assertThat(rig.extend(s, a, a.length)).isEqualTo(AllocationStatus.ALLOCATED);
        rig.idle(); // the write-through copies land
        m.preempt(s);
        rig.idle();
        for (ObjectKey k : rig.hasher.chain(a, a.length)) {
            assertThat(m.isOnDevice(k)).as("block %s left the device", k).isFalse();
            assertThat(rig.store.contains(k)).as("block %s is stored", k).isTrue();
        }
        return s;
    }

    @Test
    void stagedBlocksAreTakenAsPrefetchHitsWithoutReadingTheStoreAgain() throws Exception {
        try (KvRig rig = new KvRig(spec(16))) {
            KvBlockManager m = rig.manager;
            KvSequence s = preempted(rig, 1, 4);
            long hostUsed = rig.host.used();
            long diskUsed = rig.disk.used();

            assertThat(m.stageForResume(s)).as("blocks staged").isEqualTo(4);
            assertThat(m.stagedBlocks()).as("staging buffers held").isEqualTo(4);
            rig.idle();
            assertThat(m.stats().blocks(KvLink.STAGE)).as("staging reads landed").isEqualTo(4);
            assertThat(m.stageForResume(s)).as("a second call stages nothing new").isZero();
            assertThat(rig.host.used()).as("staging takes no room in the HOST tier").isEqualTo(hostUsed);
            assertThat(rig.disk.used()).isEqualTo(diskUsed);
            long diskReads = rig.disk.stats().readOps();
            long hostReads = rig.host.stats().readOps();

            CompletableFuture<LoadOutcome> resumed = m.resume(s);
            assertThat(resumed).as("staged blocks are usable at once").isDone();
            LoadOutcome out = resumed.get();
            assertThat(out.complete()).isTrue();
            assertThat(out.loadedBlocks()).isEqualTo(4);
            rig.idle();
            assertThat(rig.disk.stats().readOps()).as("no DISK read at resume").isEqualTo(diskReads);
            assertThat(rig.host.stats().readOps()).as("no HOST tier read at resume").isEqualTo(hostReads);
            KvManagerStats st = m.stats();
            assertThat(st.prefetchHits()).isEqualTo(4);
            assertThat(st.prefetchLate()).isZero();
            assertThat(st.blocks(KvLink.PREFETCH)).isEqualTo(4);
            assertThat(st.blocks(KvLink.RELOAD)).isZero();
            assertThat(m.stagedBlocks()).as("every staging buffer given back").isZero();
            rig.assertCommittedBytes(s);
            assertThat(s.committedBlocks()).isEqualTo(4);
            m.release(s);
            m.checkInvariants();
        }
    }

    @Test
    void aResumeAfterPartialStagingLoadsTheRest() throws Exception {
        try (KvRig rig = new KvRig(spec(2))) {
            KvBlockManager m = rig.manager;
            KvSequence s = preempted(rig, 2, 4);
            assertThat(m.stageForResume(s)).as("bounded by the resume staging buffers").isEqualTo(2);
            assertThat(m.stagedBlocks()).isEqualTo(2);
            rig.idle();

            LoadOutcome out = m.resume(s).get(20, TimeUnit.SECONDS);
            assertThat(out.complete()).isTrue();
            assertThat(out.loadedBlocks()).isEqualTo(4);
            rig.idle();
            KvManagerStats st = m.stats();
            assertThat(st.prefetchHits()).as("the staged blocks").isEqualTo(2);
            assertThat(st.blocks(KvLink.RELOAD)).as("the others, loaded from the store").isEqualTo(2);
            assertThat(m.stagedBlocks()).isZero();
            rig.assertCommittedBytes(s);
            m.release(s);
            m.checkInvariants();
        }
    }

    @Test
    void theBoundIsSharedBySequencesAndFreedByAResume() throws Exception {
        try (KvRig rig = new KvRig(spec(3))) {
            KvBlockManager m = rig.manager;
            KvSequence a = preempted(rig, 3, 2);
            KvSequence b = preempted(rig, 4, 2);
            assertThat(m.stageForResume(a)).isEqualTo(2);
            assertThat(m.stageForResume(b)).as("one buffer left").isEqualTo(1);
            assertThat(m.stagedBlocks()).isEqualTo(3);
            rig.idle();
            m.resume(a).get(20, TimeUnit.SECONDS);
            rig.idle();
            assertThat(m.stagedBlocks()).isEqualTo(1);
            assertThat(m.stageForResume(b)).as("the buffers a resume gave back stage the rest").isEqualTo(1);
            rig.idle();
            m.release(a);
            LoadOutcome out = m.resume(b).get(20, TimeUnit.SECONDS);
            assertThat(out.complete()).isTrue();
            rig.idle();
            assertThat(m.stats().prefetchHits()).isEqualTo(4);
            rig.assertCommittedBytes(b);
            m.release(b);
            assertThat(m.stagedBlocks()).isZero();
            m.checkInvariants();
        }
    }

    @Test
    void releasingWhileStagingIsInFlightGivesEveryBufferBackOnce() throws Exception {
        try (KvRig rig = new KvRig(spec(16))) {
            KvBlockManager m = rig.manager;
            int freeBefore = m.freeSlots();
            KvSequence s = preempted(rig, 5, 4);
            long hostStored = rig.host.used();
            assertThat(m.freeSlots()).isEqualTo(freeBefore);
            assertThat(m.stageForResume(s)).isEqualTo(4);
            m.release(s); // reads still in flight (or some landed): their buffers come back as they land
            m.checkInvariants();
            rig.idle();
            assertThat(m.stagedBlocks()).as("staging buffers held after the release").isZero();
            assertThat(m.freeSlots()).isEqualTo(freeBefore);
            assertThat(rig.host.used()).as("HOST tier usage: what the stored blocks took before the staging").isEqualTo(hostStored);

            // the slots and buffers are whole: a later sequence stages and resumes byte-exact
            KvSequence t = preempted(rig, 6, 4);
            assertThat(m.stageForResume(t)).isEqualTo(4);
            rig.idle();
            assertThat(m.resume(t).get(20, TimeUnit.SECONDS).complete()).isTrue();
            rig.assertCommittedBytes(t);
            m.release(t);
            rig.idle();
            assertThat(m.stagedBlocks()).isZero();
        }
    }

    @Test
    void resumingWhileStagingIsInFlightWaitsForTheReadsAndKeepsTheBytes() throws Exception {
        try (KvRig rig = new KvRig(spec(16))) {
            KvBlockManager m = rig.manager;
            for (int round = 0; round < 5; round++) {
                KvSequence s = preempted(rig, 10 + round, 4);
                long hits = m.stats().prefetchHits();
                long late = m.stats().prefetchLate();
                assertThat(m.stageForResume(s)).isEqualTo(4);
                LoadOutcome out = m.resume(s).get(20, TimeUnit.SECONDS); // no wait: reads in flight are claimed
                assertThat(out.complete()).isTrue();
                assertThat(out.loadedBlocks()).isEqualTo(4);
                rig.idle();
                KvManagerStats st = m.stats();
                assertThat(st.prefetchHits() - hits + st.prefetchLate() - late).as("every block taken from its staging")
                        .isEqualTo(4);
                assertThat(m.stagedBlocks()).isZero();
                rig.assertCommittedBytes(s);
                m.release(s);
                m.checkInvariants();
            }
        }
    }

    @Test
    void closingTheManagerWithStagedBlocksLeaksNothing() throws Exception {
        try (KvRig rig = new KvRig(spec(16))) {
            KvSequence s = preempted(rig, 20, 3);
            assertThat(rig.manager.stageForResume(s)).isEqualTo(3);
            // the rig's close closes the manager with the sequence still preempted and staged, then
            // checks that the store, the tiers and every off-heap region (staging included) are empty
        }
    }

    @Test
    void blocksStillOnTheDeviceAreSharedNotStaged() throws Exception {
        try (KvRig rig = new KvRig(spec(16))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(50, 3 * BT);
            KvSequence s = m.newSequence();
            rig.extend(s, a, a.length);
            rig.idle();
            KvSequence holder = m.newSequence(); // shares the first two blocks, so they stay on the device
            assertThat(m.load(m.match(a, 2 * BT), holder).get(10, TimeUnit.SECONDS).complete()).isTrue();
            m.preempt(s);
            rig.idle();
            assertThat(m.stageForResume(s)).as("only the block that left the device").isEqualTo(1);
            rig.idle();
            assertThat(m.resume(s).get(10, TimeUnit.SECONDS).complete()).isTrue();
            rig.idle();
            assertThat(m.stats().prefetchHits()).isEqualTo(1);
            assertThat(m.stagedBlocks()).isZero();
            rig.assertCommittedBytes(s);
            m.release(holder);
            m.release(s);
            m.checkInvariants();
        }
    }

    @Test
    void misuseIsRefusedWithTheOffendingValues() throws Exception {
        try (KvRig rig = new KvRig(spec(16))) {
            KvBlockManager m = rig.manager;
            int[] a = KvRig.tokens(30, 2 * BT);
            KvSequence s = m.newSequence();
            rig.extend(s, a, a.length);
            assertThatThrownBy(() -> m.stageForResume(s)).isInstanceOf(IllegalStateException.class).hasMessageContaining("RUNNING");
            m.release(s);
            assertThatThrownBy(() -> m.stageForResume(s)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("released");
        }
        assertThatThrownBy(() -> KvManagerConfig.defaults().resumeStagingBlocks(-1).conclude())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
    }

    @Test
    void withoutResumeStagingNothingIsStagedAndTheResumeLoads() throws Exception {
        try (KvRig rig = new KvRig(spec(0))) {
            KvBlockManager m = rig.manager;
            KvSequence s = preempted(rig, 40, 3);
            assertThat(m.stageForResume(s)).isZero();
            assertThat(m.resume(s).get(20, TimeUnit.SECONDS).complete()).isTrue();
            rig.idle();
            assertThat(m.stats().prefetchHits()).isZero();
            assertThat(m.stats().blocks(KvLink.RELOAD)).isEqualTo(3);
            rig.assertCommittedBytes(s);
            m.release(s);
        }
    }
}
