package dev.strata.engine.schedule;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.TieredStore;
import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.expert.SlotScope;
import dev.strata.memory.device.DeviceTier;
import dev.strata.cache.kv.AllocationStatus;
import dev.strata.cache.kv.BlockLocation;
import dev.strata.cache.kv.GatedTier;
import dev.strata.cache.kv.KvDropRelay;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.host.HostTier;
import dev.strata.testing.Property;
import dev.strata.memory.transfer.TransferEngine;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.KvLink;
import dev.strata.cache.kv.KvManagerStats;
import dev.strata.cache.kv.KvLayout;
import dev.strata.cache.kv.KvSequence;
import dev.strata.cache.kv.ModelFingerprint;
import dev.strata.cache.kv.PrefixHashContext;
import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.kv.StridedKvLayout;
import dev.strata.cache.routing.BurstStart;
import dev.strata.cache.routing.RequestStart;
import dev.strata.cache.routing.RoutingPhase;
import dev.strata.cache.routing.RoutingRecord;
import dev.strata.cache.routing.RoutingStep;
import dev.strata.cache.routing.RoutingTraceHeader;
import dev.strata.cache.routing.RoutingTraceReader;
import dev.strata.cache.routing.RoutingTraceWriter;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.kernel.KernelPool;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The continuous-batching scheduler on a small synthetic Qwen3-MoE: every request's tokens and
 * logits are bit-identical to running it alone, under concurrency, preemption (swap and
 * recompute), cancellation and an admission floor; a request whose prefill, decode, chooser or
 * sink fails (a KV tier faulting under it, {@link FaultingKvLayout}) fails alone, its sequence
 * closed at once, while the others keep their alone tokens; a recorded routing trace reads back as
 * the routing the runner used.
 */
class SchedulerTest {
    static final int BLOCK_TOKENS = 4;

    @TempDir
    static Path dir;
    static Path model;

    @BeforeAll
    static void synth() throws Exception {
        model = dir.resolve("qwen3-moe");
        SynthSpec spec = new SynthSpec(ModelFamily.QWEN3_MOE, 3, 6, 2, 48, 40, 24, 6, 2, 8, 400, DType.BF16, 4242, 1, 0,
                false);
        ModelSynthesizer.write(spec, model, (d, t, b, tb) -> { });
    }

    /**
     * A runner over a KV manager of {@code slots} blocks, with (when {@code hostBlocks > 0}) a
     * write-back store over a HOST tier of that many blocks; closes what it opened.
     */
    static final class Rig implements AutoCloseable {
        final ModelDirectory dirModel = ModelDirectory.open(model);
        final KernelPool pool = new KernelPool(1);
        final Arena arena = Arena.ofShared();
        final HostTier host;
        final GatedTier gate; // null: the store writes to HOST at once
        final TransferEngine transfers;
        final TieredStore store;
        final KvBlockManager kv;
        final ModelRunner runner;
        HostTier masterTier;
        DeviceTier expertTier;
        ExpertMasters masters;
        ExpertPager pager;

        Rig(int slots) {
            this(slots, 0, 0);
        }

        Rig(int slots, int hostBlocks) {
            this(slots, hostBlocks, 0);
        }

        /** With {@code expertSlots > 0}, experts are paged through that many slots per MoE layer. */
        Rig(int slots, int hostBlocks, int expertSlots) {
            this(slots, hostBlocks, expertSlots, UnaryOperator.identity());
        }

        /** The manager's layout is {@code layout} applied to the block-major layout over the arena. */
        Rig(int slots, int hostBlocks, int expertSlots, UnaryOperator<KvLayout> layout) {
            this(slots, hostBlocks, expertSlots, layout, false);
        }

        /**
         * With {@code gate}, the store keeps its blocks in a tier that holds every write until the
         * test opens it (so the write-back offloads that evictions wait for stay in flight).
         */
        Rig(int slots, int hostBlocks, boolean gate) {
            this(slots, hostBlocks, 0, UnaryOperator.identity(), gate);
        }

        private Rig(int slots, int hostBlocks, int expertSlots, UnaryOperator<KvLayout> layout, boolean gated) {
            KvGeometry g = ModelRunner.kvGeometry(dirModel.config(), BLOCK_TOKENS);
            MemorySegment kvArena = arena.allocate(StridedKvLayout.blockMajorBytes(g, slots), 64);
            PrefixHasher hasher = new PrefixHasher(PrefixHashContext.of(ModelFingerprint.of("qwen3-moe", g), g));
            KvBlockManager.Builder b = KvBlockManager.builder(layout.apply(StridedKvLayout.blockMajor(g, slots, kvArena)), hasher);
            if (hostBlocks > 0) {
                long slab = Long.highestOneBit(g.bytesPerBlock() * 2 - 1); // a power of two ≥ the block
                host = HostTier.slab("scheduler-test-host", hostBlocks * slab, slab);
                KvDropRelay relay = new KvDropRelay();
                gate = gated ? new GatedTier(host) : null;
                store = TieredStore.builder().dropListener(relay).tier(gate != null ? gate : host, 1.0, 0.9, PolicyKind.PRIORITY_LRU).build();
                transfers = new TransferEngine(TransferEngine.Settings.defaults().withStagingBytes(64 * 1024));
                b.store(store, transfers, relay);
            } else {
                host = null;
                gate = null;
                store = null;
                transfers = null;
            }
            kv = b.build();
            if (expertSlots > 0) {
                masterTier = HostTier.create("scheduler-test-masters", 64L << 20);
                expertTier = DeviceTier.cpu("scheduler-test-experts", 64L << 20);
                masters = ModelRunner.loadMasters(dirModel.weights(), masterTier);
                pager = ExpertPager.builder(masters, expertTier).topK(dirModel.config().numExpertsPerTok())
                        .slotsPerLayer(expertSlots).scope(SlotScope.PER_LAYER).build();
            }
            runner = new ModelRunner(dirModel.weights(), new Kernels(pool), kv, kvArena, pager);
        }

        /** Every slot can be had by one new sequence: nothing is held. */
        void assertNothingHeld() {
            kv.checkInvariants();
            KvSequence probe = kv.newSequence();
            AllocationStatus status = kv.allocateTo(probe, kv.slotCount() * BLOCK_TOKENS);
            for (int tries = 0; status == AllocationStatus.WAIT && tries < 100; tries++) {
                kv.awaitIdle(5, TimeUnit.SECONDS); // write-back: evicting waits for the offloads
                status = kv.allocateTo(probe, kv.slotCount() * BLOCK_TOKENS);
            }
            assertThat(status).isEqualTo(AllocationStatus.ALLOCATED);
            kv.release(probe);
            kv.checkInvariants();
        }

        @Override
        public void close() {
            if (pager != null) {
                pager.checkInvariants();
                pager.close();
                masters.close();
                expertTier.close();
                masterTier.close();
            }
            kv.close();
            if (store != null) {
                store.close();
                transfers.close();
                host.close();
            }
            pool.close();
            arena.close();
            dirModel.close();
        }
    }

    /** What a request produced: its tokens, the logits each was chosen from, how it ended. */
    static class Output implements TokenSink {
        final List<Integer> tokens = new ArrayList<>();
        final List<float[]> logits = new ArrayList<>();
        final List<FinishReason> finishes = new ArrayList<>();
        final List<RuntimeException> failures = new ArrayList<>();

        @Override
        public void token(long request, int token, float[] l) {
            assertThat(finishes).as("token after finish").isEmpty();
            tokens.add(token);
            logits.add(l.clone());
        }

        @Override
        public void finished(long request, FinishReason reason) {
            assertThat(failures).as("finished after failed").isEmpty();
            finishes.add(reason);
        }

        @Override
        public void failed(long request, RuntimeException error) {
            assertThat(finishes).as("failed after finished").isEmpty();
            failures.add(error);
        }
    }

    /** Greedy generation of {@code maxNew} tokens running the prompt alone, as {@link Output}. */
    static Output alone(int[] prompt, int maxNew) {
        Output out = new Output();
        try (Rig rig = new Rig(64); ModelRunner.Sequence s = rig.runner.newSequence()) {
            float[] last = s.prefill(prompt, false)[0];
            for (int i = 0; i < maxNew; i++) {
                int t = TokenChooser.GREEDY.choose(0, last);
                out.token(0, t, last);
                if (i + 1 < maxNew) {
                    last = s.decode(t);
                }
            }
        }
        return out;
    }

    static int[] prompt(long seed, int length) {
        SplittableRandom random = new SplittableRandom(seed);
        int[] p = new int[length];
        for (int i = 0; i < length; i++) {
            p[i] = random.nextInt(400);
        }
        return p;
    }

    static void assertSame(Output got, Output want, String what) {
        assertThat(got.tokens).as(what + " tokens").isEqualTo(want.tokens);
        assertThat(got.logits).as(what + " logit count").hasSameSizeAs(want.logits);
        for (int i = 0; i < want.logits.size(); i++) {
            assertThat(bits(got.logits.get(i))).as(what + " logits bits of token " + i).isEqualTo(bits(want.logits.get(i)));
        }
    }

    static int[] bits(float[] x) {
        int[] b = new int[x.length];
        for (int i = 0; i < x.length; i++) {
            b[i] = Float.floatToRawIntBits(x[i]);
        }
        return b;
    }

    /** Runs {@code scheduler} to idle, checking the manager's invariants after every step. */
    static void drain(Scheduler scheduler, Rig rig) {
        int guard = 0;
        while (scheduler.step()) {
            rig.kv.checkInvariants();
            assertThat(++guard).as("steps").isLessThan(10_000);
        }
        rig.kv.checkInvariants();
    }

    @Test
    void concurrentRequestsProduceWhatEachProducesAlone() {
        int[] lengths = {3, 7, 11, 18};
        int[] maxNew = {6, 5, 8, 4};
        try (Rig rig = new Rig(64)) {
            Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).build();
            Output[] outs = new Output[lengths.length];
            for (int i = 0; i < lengths.length; i++) {
                outs[i] = new Output();
                scheduler.submit(prompt(10 + i, lengths[i]), maxNew[i], outs[i]);
            }
            drain(scheduler, rig);
            assertThat(scheduler.peakRunning()).isEqualTo(lengths.length);
            assertThat(scheduler.preemptions()).isZero();
            for (int i = 0; i < lengths.length; i++) {
                assertSame(outs[i], alone(prompt(10 + i, lengths[i]), maxNew[i]), "request " + i);
                assertThat(outs[i].finishes).containsExactly(FinishReason.LENGTH);
            }
            rig.assertNothingHeld();
        }
    }

    @Test
    void pagedExpertsAtATightCapGiveTheUnpagedOutputs() {
        int[] lengths = {13, 4, 9};
        int[] maxNew = {5, 7, 6};
        try (Rig rig = new Rig(10, 0, 3)) {
            Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).preemption(PreemptionMode.RECOMPUTE).build();
            Output[] outs = new Output[lengths.length];
            for (int i = 0; i < lengths.length; i++) {
                outs[i] = new Output();
                scheduler.submit(prompt(80 + i, lengths[i]), maxNew[i], outs[i]);
            }
            drain(scheduler, rig);
            assertThat(rig.runner.groupedLayerRuns()).as("prefills split into token groups").isPositive();
            for (int i = 0; i < lengths.length; i++) {
                assertSame(outs[i], alone(prompt(80 + i, lengths[i]), maxNew[i]), "paged request " + i);
            }
            rig.assertNothingHeld();
        }
    }

    @ParameterizedTest
    @EnumSource(PreemptionMode.class)
    void aTightKvBudgetPreemptsAndStillGivesIdenticalOutputs(PreemptionMode mode) {
        int[] lengths = {5, 6, 9, 7, 3};
        int[] maxNew = {8, 9, 7, 8, 10};
        try (Rig rig = new Rig(8)) {
            Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).preemption(mode).build();
            Output[] outs = new Output[lengths.length];
            for (int i = 0; i < lengths.length; i++) {
                outs[i] = new Output();
                scheduler.submit(prompt(20 + i, lengths[i]), maxNew[i], outs[i]);
            }
            drain(scheduler, rig);
            assertThat(scheduler.preemptions()).as("preemptions").isPositive();
            assertThat(scheduler.resumes()).as("resumes").isEqualTo(scheduler.preemptions());
            for (int i = 0; i < lengths.length; i++) {
                assertSame(outs[i], alone(prompt(20 + i, lengths[i]), maxNew[i]), mode + " request " + i);
                assertThat(outs[i].finishes).containsExactly(FinishReason.LENGTH);
            }
            rig.assertNothingHeld();
        }
    }

    @Test
    void aStepThatCanOnlyWaitForOffloadsParksInsteadOfSpinning() throws Exception {
        try (Rig rig = new Rig(8, 64, true)) {
            Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).build();
            Output first = new Output();
            scheduler.submit(prompt(90, 13), 3, first); // four blocks, cached once it ends (write-back: no copy yet)
            drain(scheduler, rig);
            Output second = new Output();
            scheduler.submit(prompt(91, 25), 3, second); // seven blocks: three of the first's must be written back first
            long before = scheduler.steps();
            AtomicBoolean done = new AtomicBoolean();
            Thread worker = Thread.ofPlatform().name("scheduler-test-worker").start(() -> {
                scheduler.runUntilIdle();
                done.set(true);
            });
            long heldNanos = TimeUnit.SECONDS.toNanos(1);
            Thread.sleep(TimeUnit.NANOSECONDS.toMillis(heldNanos)); // the write-backs wait at the gate all this time
            long waitingSteps = scheduler.steps() - before;
            assertThat(done).as("the second request cannot run before its slots are written back").isFalse();
            rig.gate.open();
            worker.join(TimeUnit.SECONDS.toMillis(30));
            assertThat(done).isTrue();
            // parked up to TRANSFER_WAIT_NANOS a step: about one step a millisecond, where stepping again at once
            // ran tens of thousands in the same second
            assertThat(waitingSteps).as("steps while every request waited for the offloads")
                    .isPositive().isLessThan(3 * heldNanos / Scheduler.TRANSFER_WAIT_NANOS);
            assertThat(scheduler.preemptions()).isZero();
            assertSame(second, alone(prompt(91, 25), 3), "the request that waited");
            assertThat(second.finishes).containsExactly(FinishReason.LENGTH);
            rig.kv.awaitIdle(10, TimeUnit.SECONDS);
            rig.assertNothingHeld();
        }
    }

    @Test
    void swapPreemptionBringsBlocksBackFromTheStore() {
        int[] lengths = {9, 6, 11, 7};
        int[] maxNew = {9, 9, 8, 10};
        try (Rig rig = new Rig(9, 64)) {
            Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).preemption(PreemptionMode.SWAP).build();
            Output[] outs = new Output[lengths.length];
            for (int i = 0; i < lengths.length; i++) {
                outs[i] = new Output();
                scheduler.submit(prompt(70 + i, lengths[i]), maxNew[i], outs[i]);
            }
            drain(scheduler, rig);
            rig.kv.awaitIdle(10, TimeUnit.SECONDS);
            rig.kv.checkInvariants();
            assertThat(scheduler.preemptions()).as("preemptions").isPositive();
            assertThat(rig.kv.stats().hits(BlockLocation.HOST)).as("blocks loaded back from HOST").isPositive();
            for (int i = 0; i < lengths.length; i++) {
                assertSame(outs[i], alone(prompt(70 + i, lengths[i]), maxNew[i]), "swap request " + i);
                assertThat(outs[i].finishes).containsExactly(FinishReason.LENGTH);
            }
            rig.assertNothingHeld();
        }
    }

    /**
     * A decoding sequence swapped out and resumed with
     * {@link ModelRunner.Sequence#resumeForDecode}: the resume runs no forward pass; its next decode
     * computes, with the new token, the tokens whose KV did not come back (the partial tail when the
     * store brought its full blocks back from HOST, every token when there is no store); every logit
     * after it is bit-identical to decoding alone. {@link ModelRunner.Sequence#resume} instead
     * recomputes the last token and returns the logits the sequence had before the swap.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void aSequenceResumedForDecodeComputesWhatDidNotComeBackWithItsNextToken(boolean withStore) {
        int[] prompt = prompt(808, 11);
        int steps = 6;
        Output want = alone(prompt, steps);
        try (Rig rig = withStore ? new Rig(8, 64) : new Rig(8)) {
            int[] computed = {0}; // tokens the forward passes computed: routed in the first MoE layer
            rig.runner.routingObserver((layer, token, ids) -> {
                if (layer == 0) {
                    computed[0]++;
                }
            });
            try (ModelRunner.Sequence s = rig.runner.newSequence()) {
                s.prefill(prompt, false);
                s.decode(want.tokens.get(0));
                s.decode(want.tokens.get(1)); // 13 tokens: three full blocks of 4 and a tail of 1
                s.preempt(); // its committed blocks leave the device: offloaded to HOST, or dropped without a store
                assertThat(rig.kv.awaitIdle(10, TimeUnit.SECONDS)).isTrue();
                assertThat(s.blockCount()).isZero();
                long hostHits = withStore ? rig.kv.stats().hits(BlockLocation.HOST) : 0;
                computed[0] = 0;
                assertThat(s.resumeForDecode()).isTrue();
                assertThat(computed[0]).as("tokens the resume computed").isZero();
                if (withStore) {
                    assertThat(rig.kv.stats().hits(BlockLocation.HOST) - hostHits).as("blocks loaded back from HOST").isEqualTo(3);
                }
                // the first decode after the resume, batched with another sequence: its span is the
                // tokens that did not come back and its new token
                int[] otherPrompt = prompt(909, 5);
                Output otherWant = alone(otherPrompt, 2);
                try (ModelRunner.Sequence other = rig.runner.newSequence()) {
                    other.prefill(otherPrompt, false);
                    other.reserve(otherPrompt.length + 1);
                    s.reserve(s.length() + 1);
                    computed[0] = 0;
                    float[][] out = rig.runner.decodeBatch(List.of(s, other), new int[] {want.tokens.get(2), otherWant.tokens.get(0)});
                    assertThat(computed[0]).as("tokens the first (batched) decode after the resume computed")
                            .isEqualTo((withStore ? 1 + 1 : 13 + 1) + 1);
                    assertThat(out[0]).as("logits after the resume").containsExactly(want.logits.get(3));
                    assertThat(out[1]).as("logits of the sequence batched with it").containsExactly(otherWant.logits.get(1));
                }
                float[] logits;
                for (int i = 3; i < steps - 1; i++) {
                    computed[0] = 0;
                    logits = s.decode(want.tokens.get(i));
                    assertThat(computed[0]).as("tokens decode %d computed", i).isEqualTo(1);
                    assertThat(logits).as("logits of decode %d", i).containsExactly(want.logits.get(i + 1));
                }
                s.preempt();
                assertThat(rig.kv.awaitIdle(10, TimeUnit.SECONDS)).isTrue();
                assertThat(s.resume()).as("logits resume() recomputes").containsExactly(want.logits.get(steps - 1));
            }
            rig.assertNothingHeld();
        }
    }

    /**
     * Swap preemption with the resume lookahead: the preempted request that resumes next has its
     * blocks staged while the others run (the transfers are let land between steps, so the
     * schedule is the same every run), its resume takes them as prefetch hits, and every output is
     * bit-identical to running alone; without the lookahead nothing is staged and the outputs are
     * the same.
     */
    @Test
    void swappedRequestsAreStagedBeforeTheyResumeAndKeepTheirAloneOutputs() {
        int[] lengths = {9, 6, 11, 7};
        int[] maxNew = {9, 9, 8, 10};
        for (int lookahead : new int[] {1, 0}) {
            try (Rig rig = new Rig(9, 64)) {
                Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).preemption(PreemptionMode.SWAP).resumeLookahead(lookahead)
                        .build();
                Output[] outs = new Output[lengths.length];
                for (int i = 0; i < lengths.length; i++) {
                    outs[i] = new Output();
                    scheduler.submit(prompt(70 + i, lengths[i]), maxNew[i], outs[i]);
                }
                long stagedBeforeAResume = 0; // staging reads landed before a step that resumed a request
                int guard = 0;
                while (true) {
                    long staged = rig.kv.stats().blocks(KvLink.STAGE);
                    long resumes = scheduler.resumes();
                    boolean more = scheduler.step();
                    if (scheduler.resumes() > resumes) {
                        stagedBeforeAResume += staged;
                    }
                    assertThat(rig.kv.awaitIdle(10, TimeUnit.SECONDS)).isTrue(); // offloads and staging reads land
                    rig.kv.checkInvariants();
                    if (!more) {
                        break;
                    }
                    assertThat(++guard).as("steps").isLessThan(10_000);
                }
                KvManagerStats st = rig.kv.stats();
                assertThat(scheduler.preemptions()).as("preemptions").isPositive();
                assertThat(scheduler.resumes()).as("resumes").isPositive();
                if (lookahead > 0) {
                    assertThat(stagedBeforeAResume).as("blocks staged before a resume").isPositive();
                    assertThat(st.blocks(KvLink.STAGE)).as("blocks staged").isPositive();
                    assertThat(st.prefetchHits()).as("staged blocks a resume took").isPositive();
                    assertThat(st.prefetchHits() + st.prefetchLate()).isLessThanOrEqualTo(st.blocks(KvLink.STAGE));
                } else {
                    assertThat(st.blocks(KvLink.STAGE)).as("no lookahead: nothing staged").isZero();
                    assertThat(st.prefetchHits()).isZero();
                }
                assertThat(rig.kv.stagedBlocks()).as("staging buffers held at the end").isZero();
                for (int i = 0; i < lengths.length; i++) {
                    assertSame(outs[i], alone(prompt(70 + i, lengths[i]), maxNew[i]), "lookahead " + lookahead + " request " + i);
                    assertThat(outs[i].finishes).containsExactly(FinishReason.LENGTH);
                }
                rig.assertNothingHeld();
                assertThatThrownBy(() -> Scheduler.builder(rig.runner, rig.kv).resumeLookahead(-1))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
            }
        }
    }

    @Test
    void cancellationFreesTheSequencesBlocks() throws Exception {
        try (Rig rig = new Rig(16)) {
            Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).build();
            Output a = new Output();
            Output b = new Output();
            Output c = new Output();
            long ida = scheduler.submit(prompt(30, 9), 40, a);
            long idb = scheduler.submit(prompt(31, 6), 5, b);
            scheduler.step();
            scheduler.step();
            int heldBefore = scheduler.heldBlocks();
            assertThat(scheduler.runningCount()).isEqualTo(2);
            // cancel from another thread, and a request still in the inbox
            Thread t = new Thread(() -> scheduler.cancel(ida));
            t.start();
            t.join();
            long idc = scheduler.submit(prompt(32, 13), 40, c);
            assertThat(scheduler.cancel(idc)).isTrue();
            scheduler.step();
            rig.kv.checkInvariants();
            assertThat(a.finishes).containsExactly(FinishReason.CANCELLED);
            assertThat(c.finishes).containsExactly(FinishReason.CANCELLED);
            assertThat(c.tokens).isEmpty();
            assertThat(scheduler.runningCount()).isEqualTo(1);
            assertThat(scheduler.heldBlocks()).isLessThan(heldBefore);
            assertThat(scheduler.cancel(ida)).as("a finished request is not live").isFalse();
            drain(scheduler, rig);
            assertSame(b, alone(prompt(31, 6), 5), "survivor");
            assertThat(b.finishes).containsExactly(FinishReason.LENGTH);
            rig.assertNothingHeld();

            Output d = new Output();
            long idd = scheduler.submit(prompt(33, 10), 30, d);
            scheduler.step();
            scheduler.close();
            assertThat(d.finishes).containsExactly(FinishReason.CANCELLED);
            assertThat(scheduler.cancel(idd)).isFalse();
            rig.assertNothingHeld();
        }
    }

    @Test
    void admissionRespectsTheFloor() {
        int[] maxNew = {4, 6, 3, 5};
        for (int floor : new int[] {0, 12}) {
            try (Rig rig = new Rig(16)) {
                Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).admissionFloor(() -> floor).build();
                Output[] outs = new Output[maxNew.length];
                for (int i = 0; i < maxNew.length; i++) {
                    outs[i] = new Output();
                    scheduler.submit(prompt(40 + i, 7), maxNew[i], outs[i]);
                }
                drain(scheduler, rig);
                assertThat(scheduler.peakRunning()).as("floor " + floor).isEqualTo(floor == 0 ? 4 : 2);
                for (int i = 0; i < maxNew.length; i++) {
                    assertSame(outs[i], alone(prompt(40 + i, 7), maxNew[i]), "floor " + floor + " request " + i);
                }
                rig.assertNothingHeld();
            }
        }
    }

    @Test
    void randomArrivalsCancellationsAndBudgetsKeepEveryOutputAPrefixOfRunningAlone() {
        Property.forAll("scheduler random", 16, random -> {
            int slots = 6 + random.nextInt(9);
            PreemptionMode mode = random.nextBoolean() ? PreemptionMode.SWAP : PreemptionMode.RECOMPUTE;
            int floor = random.nextInt(4);
            int requests = 3 + random.nextInt(4);
            int[][] prompts = new int[requests][];
            int[] maxNew = new int[requests];
            int[] arrival = new int[requests]; // the step before which it is submitted
            int[] cancelAt = new int[requests]; // the step before which it is cancelled, -1 never
            for (int i = 0; i < requests; i++) {
                prompts[i] = prompt(random.nextLong(), 1 + random.nextInt(14));
                maxNew[i] = 1 + random.nextInt(8);
                arrival[i] = random.nextInt(6);
                cancelAt[i] = random.nextInt(4) == 0 ? arrival[i] + random.nextInt(6) : -1;
            }
            try (Rig rig = new Rig(slots)) {
                Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).preemption(mode).admissionFloor(() -> floor).build();
                Output[] outs = new Output[requests];
                long[] ids = new long[requests];
                for (int step = 0; step < 10_000; step++) {
                    for (int i = 0; i < requests; i++) {
                        if (arrival[i] == step) {
                            outs[i] = new Output();
                            ids[i] = scheduler.submit(prompts[i], maxNew[i], outs[i]);
                        }
                        if (cancelAt[i] == step) {
                            scheduler.cancel(ids[i]);
                        }
                    }
                    boolean more = scheduler.step();
                    rig.kv.checkInvariants();
                    assertThat(scheduler.heldBlocks()).isLessThanOrEqualTo(slots);
                    for (Output o : outs) {
                        assertThat(o == null ? 0 : o.finishes.size()).isLessThanOrEqualTo(1);
                    }
                    if (!more && step > 12) {
                        break;
                    }
                }
                assertThat(scheduler.idle()).isTrue();
                for (int i = 0; i < requests; i++) {
                    Output o = outs[i];
                    assertThat(o.finishes).hasSize(1);
                    if ((prompts[i].length + maxNew[i] + BLOCK_TOKENS - 1) / BLOCK_TOKENS > slots) {
                        assertThat(o.finishes).containsExactly(FinishReason.TOO_LONG);
                        continue;
                    }
                    Output want = alone(prompts[i], maxNew[i]);
                    if (o.finishes.get(0) == FinishReason.CANCELLED) {
                        assertThat(cancelAt[i]).isNotNegative();
                        int n = o.tokens.size();
                        assertThat(n).isLessThan(maxNew[i]);
                        want.tokens.subList(n, want.tokens.size()).clear();
                        want.logits.subList(n, want.logits.size()).clear();
                    } else {
                        assertThat(o.finishes).containsExactly(FinishReason.LENGTH);
                    }
                    assertSame(o, want, mode + " request " + i);
                }
                rig.assertNothingHeld();
            }
        });
    }

    @Test
    void perSequenceDecodeCallsGiveTheSameOutputsAsTheBatch() {
        int[] lengths = {4, 9, 6};
        int[] maxNew = {7, 5, 6};
        Output[][] outs = new Output[2][lengths.length];
        long[] calls = new long[2];
        for (int mode = 0; mode < 2; mode++) {
            try (Rig rig = new Rig(64)) {
                Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).batchedDecode(mode == 0).build();
                for (int i = 0; i < lengths.length; i++) {
                    outs[mode][i] = new Output();
                    scheduler.submit(prompt(90 + i, lengths[i]), maxNew[i], outs[mode][i]);
                }
                drain(scheduler, rig);
                calls[mode] = scheduler.decodeBatches();
                int decoded = Arrays.stream(maxNew).map(n -> n - 1).sum();
                assertThat(scheduler.decodedTokens()).isEqualTo(decoded);
                rig.assertNothingHeld();
            }
        }
        assertThat(calls[0]).as("batched: one decode call per step").isEqualTo(Arrays.stream(maxNew).max().orElseThrow() - 1);
        assertThat(calls[1]).as("per sequence: one call per token").isEqualTo(Arrays.stream(maxNew).map(n -> n - 1).sum());
        for (int i = 0; i < lengths.length; i++) {
            assertSame(outs[0][i], outs[1][i], "request " + i);
        }
    }

    @Test
    void eachRequestUsesItsOwnChooserAndASinkCanStopIt() {
        try (Rig rig = new Rig(64)) {
            Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).build();
            int[] p = prompt(95, 6);
            Output greedy = new Output();
            Output lowest = new Output();
            scheduler.submit(-1, p, 5, TokenChooser.GREEDY, greedy);
            TokenChooser lowestLogit = (request, logits) -> {
                int best = 0;
                for (int i = 1; i < logits.length; i++) {
                    if (logits[i] < logits[best]) {
                        best = i;
                    }
                }
                return best;
            };
            scheduler.submit(-1, p, 5, lowestLogit, lowest);
            // a sink that asks to stop at its third token, from inside token()
            List<Integer> stopped = new ArrayList<>();
            List<FinishReason> stopReason = new ArrayList<>();
            int[] started = new int[2];
            long[] id = new long[1];
            id[0] = scheduler.submit(-1, p, 9, TokenChooser.GREEDY, new TokenSink() {
                @Override
                public void started(long request, int promptTokens, int reusedTokens) {
                    started[0]++;
                    started[1] = promptTokens;
                }

                @Override
                public void token(long request, int token, float[] logits) {
                    stopped.add(token);
                    if (stopped.size() == 3) {
                        assertThat(scheduler.stop(request)).isTrue();
                    }
                }

                @Override
                public void finished(long request, FinishReason reason) {
                    stopReason.add(reason);
                }

                @Override
                public void failed(long request, RuntimeException error) {
                    throw new AssertionError("request " + request + " failed", error);
                }
            });
            drain(scheduler, rig);
            assertSame(greedy, alone(p, 5), "greedy");
            assertThat(lowest.tokens).isNotEqualTo(greedy.tokens);
            for (int i = 0; i < lowest.tokens.size(); i++) {
                float[] l = lowest.logits.get(i);
                int t = lowest.tokens.get(i);
                for (float v : l) {
                    assertThat(l[t]).isLessThanOrEqualTo(v);
                }
            }
            assertThat(stopped).isEqualTo(alone(p, 3).tokens);
            assertThat(stopReason).containsExactly(FinishReason.STOP);
            assertThat(started).containsExactly(1, 6);
            assertThat(scheduler.stop(id[0])).as("finished: not live").isFalse();
            rig.assertNothingHeld();
        }
    }

    @Test
    void tooLongARequestEndsAtOnce() {
        try (Rig rig = new Rig(4)) {
            Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).build();
            Output o = new Output();
            scheduler.submit(prompt(50, 14), 3, o);
            drain(scheduler, rig);
            assertThat(o.finishes).containsExactly(FinishReason.TOO_LONG);
            assertThat(o.tokens).isEmpty();
        }
    }

    @Test
    void aRecordedRoutingTraceReadsBackAsTheRunnersRouting() throws Exception {
        int[] lengths = {5, 9};
        int[] maxNew = {3, 5};
        // each request alone: the layer-major ids of each forward call
        List<List<int[]>> aloneSteps = new ArrayList<>();
        for (int i = 0; i < lengths.length; i++) {
            List<int[]> steps = new ArrayList<>();
            try (Rig rig = new Rig(64); ModelRunner.Sequence s = rig.runner.newSequence()) {
                int[] buf = new int[4096];
                int[] n = {0};
                rig.runner.routingObserver((layer, token, ids) -> {
                    System.arraycopy(ids, 0, buf, n[0], ids.length);
                    n[0] += ids.length;
                });
                float[] last = s.prefill(prompt(60 + i, lengths[i]), false)[0];
                steps.add(Arrays.copyOf(buf, n[0]));
                for (int k = 1; k < maxNew[i]; k++) {
                    n[0] = 0;
                    last = s.decode(TokenChooser.GREEDY.choose(0, last));
                    steps.add(Arrays.copyOf(buf, n[0]));
                }
            }
            aloneSteps.add(steps);
        }
        Path file = dir.resolve("routing.trace");
        RoutingTraceHeader header = new RoutingTraceHeader(3, 6, 2, "qwen3-moe");
        long[] ids = new long[lengths.length];
        try (Rig rig = new Rig(64); RoutingTraceWriter writer = RoutingTraceWriter.create(file, header)) {
            Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).routingTrace(writer).build();
            for (int i = 0; i < lengths.length; i++) {
                ids[i] = scheduler.submit(100 + i, prompt(60 + i, lengths[i]), maxNew[i], new Output());
            }
            drain(scheduler, rig);
            scheduler.close();
        }
        // step 1 admits and prefills both; each later step decodes the running requests as one batch:
        // one trace step whose ids are layer-major, the batch's tokens in admission order within a layer
        List<RoutingRecord> want = new ArrayList<>();
        int steps = Arrays.stream(maxNew).max().orElseThrow();
        int topK = header.topK();
        for (int s = 0; s < steps; s++) {
            want.add(BurstStart.INSTANCE);
            if (s == 0) {
                for (int i = 0; i < lengths.length; i++) {
                    want.add(new RequestStart(100 + i, ids[i]));
                    int[] stepIds = aloneSteps.get(i).get(0);
                    want.add(RoutingStep.of(header, RoutingPhase.PREFILL, stepIds.length / header.idsPerToken(), stepIds));
                }
                continue;
            }
            List<Integer> batch = new ArrayList<>();
            for (int i = 0; i < lengths.length; i++) {
                if (s < maxNew[i]) {
                    batch.add(i);
                }
            }
            int[] stepIds = new int[batch.size() * header.idsPerToken()];
            int at = 0;
            for (int layer = 0; layer < header.layers(); layer++) {
                for (int i : batch) {
                    System.arraycopy(aloneSteps.get(i).get(s), layer * topK, stepIds, at, topK);
                    at += topK;
                }
            }
            want.add(RoutingStep.of(header, RoutingPhase.DECODE, batch.size(), stepIds));
        }
        List<RoutingRecord> got = new ArrayList<>();
        try (RoutingTraceReader reader = RoutingTraceReader.open(file)) {
            assertThat(reader.header()).isEqualTo(header);
            for (RoutingRecord r; (r = reader.next()) != null; ) {
                got.add(r);
            }
            assertThat(reader.ending()).isEqualTo(RoutingTraceReader.Ending.CLEAN);
        }
        assertThat(got).isEqualTo(want);
        RoutingStep prefill = (RoutingStep) got.get(2);
        assertThat(prefill.tokens()).isEqualTo(lengths[0]);
    }

    /**
     * A rig whose KV tier faults on demand ({@link FaultingKvLayout}): a sequence that needs a new
     * block while it faults cannot run. Prompts of 5, 6 and 7 tokens (blocks of 4) need their next
     * new block at different steps: after the first step (each prefilled, its first token chosen)
     * step 2 decodes positions 5, 6, 7 inside the blocks each holds, and step 3 puts the 7-token
     * prompt's position 8 in a new block while the others stay inside theirs.
     */
    static Rig faultingRig(FaultingKvLayout[] layout) {
        return new Rig(64, 0, 0, l -> layout[0] = new FaultingKvLayout(l));
    }

    /** After a request failed: nothing it held is held, every other sequence ran to its end. */
    static void assertIdleAfterFailure(Rig rig, Scheduler scheduler) {
        assertThat(scheduler.idle()).isTrue();
        assertThat(rig.kv.stats().openSequences()).as("open KV sequences").isZero();
        rig.assertNothingHeld();
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aPrefillThatFailsFailsOnlyItsRequestAndReleasesItsSequence(boolean batched) {
        int[] a = prompt(300, 5);
        int[] b = prompt(301, 6);
        int[] c = prompt(302, 7);
        FaultingKvLayout[] layout = new FaultingKvLayout[1];
        try (Rig rig = faultingRig(layout)) {
            Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).batchedDecode(batched).build();
            Output outA = new Output();
            Output outB = new Output();
            Output outC = new Output();
            scheduler.submit(a, 8, outA);
            scheduler.submit(b, 8, outB);
            scheduler.step(); // a and b prefilled
            scheduler.submit(c, 8, outC);
            layout[0].fault(true); // c's prefill needs new blocks; a and b decode inside the blocks they hold
            scheduler.step();
            layout[0].fault(false);

            assertThat(layout[0].faults()).isPositive();
            assertThat(outC.failures).singleElement()
                    .satisfies(e -> assertThat(e).hasMessageContaining("its tier faulted"));
            assertThat(outC.tokens).isEmpty();
            assertThat(outC.finishes).isEmpty();
            assertThat(scheduler.runningCount()).isEqualTo(2);
            assertThat(rig.kv.stats().openSequences()).as("open KV sequences after the failed prefill").isEqualTo(2);
            rig.kv.checkInvariants();

            drain(scheduler, rig);
            assertSame(outA, alone(a, 8), "request a");
            assertSame(outB, alone(b, 8), "request b");
            assertThat(outA.finishes).containsExactly(FinishReason.LENGTH);
            assertThat(outB.finishes).containsExactly(FinishReason.LENGTH);
            assertThat(outA.failures).isEmpty();
            assertThat(outB.failures).isEmpty();
            assertThat(scheduler.failures()).isEqualTo(1);
            assertIdleAfterFailure(rig, scheduler);
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aDecodeThatFailsFailsOnlyItsRequestAndTheBatchGoesOn(boolean batched) {
        int[] a = prompt(310, 5);
        int[] c = prompt(312, 7); // second in the batch: a's token is appended before c fails, b's is not
        int[] b = prompt(311, 6);
        FaultingKvLayout[] layout = new FaultingKvLayout[1];
        try (Rig rig = faultingRig(layout)) {
            Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).batchedDecode(batched).build();
            Output outA = new Output();
            Output outC = new Output();
            Output outB = new Output();
            scheduler.submit(a, 8, outA);
            scheduler.submit(c, 8, outC);
            scheduler.submit(b, 8, outB);
            scheduler.step(); // all prefilled, one token each
            scheduler.step(); // one more token each, inside the blocks they hold
            layout[0].fault(true); // c's next token needs a new block; a's and b's do not
            scheduler.step();
            layout[0].fault(false);

            assertThat(layout[0].faults()).isPositive();
            assertThat(outC.failures).singleElement()
                    .satisfies(e -> assertThat(e).hasMessageContaining("its tier faulted"));
            assertThat(outC.finishes).isEmpty();
            Output cAlone = alone(c, 8);
            assertThat(outC.tokens).isEqualTo(cAlone.tokens.subList(0, 2)); // what it had before the fault
            assertThat(scheduler.runningCount()).isEqualTo(2);
            assertThat(rig.kv.stats().openSequences()).as("open KV sequences after the failed decode").isEqualTo(2);
            rig.kv.checkInvariants();

            drain(scheduler, rig);
            assertSame(outA, alone(a, 8), "request a");
            assertSame(outB, alone(b, 8), "request b");
            assertThat(outA.finishes).containsExactly(FinishReason.LENGTH);
            assertThat(outB.finishes).containsExactly(FinishReason.LENGTH);
            assertThat(scheduler.failures()).isEqualTo(1);
            assertIdleAfterFailure(rig, scheduler);
        }
    }

    @Test
    void aChooserOrSinkThatThrowsFailsOnlyItsRequest() {
        int[] a = prompt(330, 6);
        int[] b = prompt(331, 9);
        int[] c = prompt(332, 4);
        try (Rig rig = new Rig(64)) {
            Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).build();
            Output outA = new Output();
            Output outB = new Output() {
                @Override
                public void token(long request, int token, float[] l) {
                    super.token(request, token, l);
                    if (tokens.size() == 3) {
                        throw new IllegalStateException("sink of b is broken");
                    }
                }
            };
            Output outC = new Output();
            int[] chosen = {0};
            TokenChooser brokenAtTwo = (request, logits) -> {
                if (++chosen[0] == 2) {
                    throw new IllegalStateException("chooser of c is broken");
                }
                return TokenChooser.GREEDY.choose(request, logits);
            };
            scheduler.submit(a, 8, outA);
            scheduler.submit(-1, b, 8, TokenChooser.GREEDY, outB);
            scheduler.submit(-1, c, 8, brokenAtTwo, outC);
            drain(scheduler, rig);

            assertSame(outA, alone(a, 8), "request a");
            assertThat(outA.finishes).containsExactly(FinishReason.LENGTH);
            assertThat(outB.failures).singleElement().satisfies(e -> assertThat(e).hasMessage("sink of b is broken"));
            assertThat(outB.tokens).isEqualTo(alone(b, 8).tokens.subList(0, 3));
            assertThat(outC.failures).singleElement().satisfies(e -> assertThat(e).hasMessage("chooser of c is broken"));
            assertThat(outC.tokens).isEqualTo(alone(c, 8).tokens.subList(0, 1));
            assertThat(scheduler.failures()).isEqualTo(2);
            assertIdleAfterFailure(rig, scheduler);
        }
    }

    @Test
    void aTierThatStaysBrokenFailsEachRequestWhenItNeedsItAndLeaksNothing() {
        int[] a = prompt(320, 5);
        int[] b = prompt(321, 6);
        int[] c = prompt(322, 7);
        FaultingKvLayout[] layout = new FaultingKvLayout[1];
        try (Rig rig = faultingRig(layout)) {
            Scheduler scheduler = Scheduler.builder(rig.runner, rig.kv).build();
            Output[] outs = {new Output(), new Output(), new Output()};
            int[][] prompts = {a, b, c};
            for (int i = 0; i < prompts.length; i++) {
                scheduler.submit(prompts[i], 8, outs[i]);
            }
            scheduler.step();
            layout[0].fault(true); // from now on no new block can be read: c fails at step 3, b at 4, a at 5
            drain(scheduler, rig);

            for (int i = 0; i < prompts.length; i++) {
                Output out = outs[i];
                assertThat(out.failures).as("request " + i).hasSize(1);
                assertThat(out.finishes).as("request " + i).isEmpty();
                int had = 8 - prompts[i].length + 1; // tokens chosen before its position 8 needed a new block
                assertThat(out.tokens).as("request " + i).isEqualTo(alone(prompts[i], 8).tokens.subList(0, had));
            }
            assertThat(scheduler.failures()).isEqualTo(3);
            layout[0].fault(false);
            assertIdleAfterFailure(rig, scheduler);
        }
    }
}
