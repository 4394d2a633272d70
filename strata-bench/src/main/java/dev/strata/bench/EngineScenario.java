package dev.strata.bench;

import dev.strata.bench.engine.ComputeMeasure;
import dev.strata.bench.engine.ConstrainedDecodeMeasure;
import dev.strata.bench.engine.DiskExpertMeasure;
import dev.strata.bench.engine.PrefixTtftMeasure;
import dev.strata.bench.engine.SlowTierTtftMeasure;
import dev.strata.bench.engine.SyntheticModels;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.memory.Sizes;
import dev.strata.memory.log.Log;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code strata bench engine}: the reference inference engine on synthetic models in the real
 * Hugging Face format, each figure against a ceiling or baseline measured in the same run:
 * decode tokens/s against the memory-bandwidth roofline, prefill GFLOP/s against the matmul
 * kernel's peak (a dense and a MoE model), time to first token on a prefix another engine
 * instance published in a shared pool against a cold prefill (8K-token prompts), the same when the
 * prefix sits in a tier slower than recomputing it (2K-token prompts), decoding
 * constrained to a JSON schema against unconstrained decoding (and the mask's cost per token), and
 * decoding with expert masters on DISK under a DRAM budget smaller than the model, the expert pager
 * against static layer-by-layer streaming and against the disk-bandwidth bound.
 *
 * <p>The models are synthesised once into {@code <work dir>/models/} and reused by later runs
 * (about 1 GB for the full run); the DISK tier's files go to {@code <work dir>/expert-disk} and
 * are deleted after. Kernels use every available processor.
 *
 * <p>Runs on the calling thread; the kernels and transfers use their own threads.
 */
public final class EngineScenario implements Scenario {

    @Override
    public String name() {
        return "engine";
    }

    @Override
    public String description() {
        return "decode vs memory roofline, prefill vs matmul peak, cross-instance and slow-tier prefix TTFT, disk experts vs streaming";
    }

    /** The synthetic models of one run. */
    record Models(SynthSpec decodeMoe, SynthSpec prefillDense, SynthSpec ttftDense, SynthSpec diskMoe) {
        static Models of(boolean quick) {
            if (quick) {
                SynthSpec moe = new SynthSpec(ModelFamily.QWEN3_MOE, 2, 4, 2, 256, 256, 256, 4, 2, 64, 1024, DType.BF16, 1,
                        1, 0, false);
                SynthSpec dense = new SynthSpec(ModelFamily.QWEN3, 2, 0, 0, 256, 512, 0, 2, 1, 64, 1024, DType.BF16, 2, 1, 0,
                        false);
                return new Models(moe, dense, dense, moe);
            }
            return new Models(
                    // active ~134 MB per token (8 layers: attention 5.2 MB + 2 of 8 experts of 4.7 MB; LM head 16.8 MB)
                    new SynthSpec(ModelFamily.QWEN3_MOE, 8, 8, 2, 1024, 1024, 768, 16, 4, 64, 8192, DType.BF16, 11, 1, 0, false),
                    new SynthSpec(ModelFamily.QWEN3, 4, 0, 0, 1024, 2816, 0, 16, 4, 64, 8192, DType.BF16, 12, 1, 0, false),
                    // cheap per token, so that an 8K-token cold prefill takes seconds, not minutes
                    new SynthSpec(ModelFamily.QWEN3, 2, 0, 0, 256, 512, 0, 2, 1, 64, 2048, DType.BF16, 13, 1, 0, false),
                    // 8 layers x 32 experts of 1.5 MiB = 384 MiB of experts on disk; budget 32 slots = 48 MiB
                    new SynthSpec(ModelFamily.QWEN3_MOE, 8, 32, 2, 512, 512, 512, 8, 2, 64, 4096, DType.BF16, 14, 1, 8, false));
        }
    }

    @Override
    public List<Figure> run(Options options, List<String> notes) throws Exception {
        boolean quick = options.quick();
        int threads = Runtime.getRuntime().availableProcessors();
        Path work = options.workDir();
        Files.createDirectories(work);
        Models m = Models.of(quick);
        List<Figure> figures = new ArrayList<>();
        Progress progress = new Progress(Log.stream("bench"), 8);

        progress.step("synthesising (or reusing) the models under " + work.resolve("models"));
        Path decodeMoe = SyntheticModels.prepare(m.decodeMoe(), "decode-moe", work, Log.stream("bench"));
        Path prefillDense = SyntheticModels.prepare(m.prefillDense(), "prefill-dense", work, Log.stream("bench"));
        Path ttftDense = SyntheticModels.prepare(m.ttftDense(), "ttft-dense", work, Log.stream("bench"));
        Path diskMoe = SyntheticModels.prepare(m.diskMoe(), "disk-moe", work, Log.stream("bench"));
        if (quick) {
            notes.add("quick run: the models are small enough to sit in the caches, so the decode figure is not a memory"
                    + " roofline figure; prompts are short");
        }

        progress.step("decode tokens/s against the memory-bandwidth roofline (MoE model)");
        figures.add(ComputeMeasure.decode("decode_tokens_per_s_vs_roofline", decodeMoe, threads, quick ? 8 : 16,
                quick ? 8 : 32, quick ? 64 * Sizes.MiB : 512 * Sizes.MiB, quick ? 3 : 7));

        progress.step("prefill GFLOP/s against the matmul kernel's peak (dense and MoE models)");
        int square = quick ? 256 : 1024;
        figures.add(ComputeMeasure.prefill("prefill_gflops_vs_matmul_peak_dense", prefillDense, threads, quick ? 64 : 512,
                square, ">= 0.5", quick ? 3 : 5));
        figures.add(ComputeMeasure.prefill("prefill_gflops_vs_matmul_peak_moe", decodeMoe, threads, quick ? 32 : 128, square,
                ">= 0", quick ? 3 : 5));

        progress.step("TTFT on a prefix another instance published in the pool, against a cold prefill");
        int promptTokens = quick ? 1024 : 8192;
        try {
            figures.add(PrefixTtftMeasure.measure(ttftDense, threads, promptTokens, 16, quick ? 2 : 3, Log.stream("bench")));
        } catch (RuntimeException e) {
            figures.add(Figure.missing(PrefixTtftMeasure.figureName(promptTokens), "s", PrefixTtftMeasure.BASELINE,
                    PrefixTtftMeasure.GOAL, "not measured: " + e));
        }

        progress.step("TTFT on a prefix in a tier slower than recomputing it, against a cold prefill");
        int slowTokens = quick ? 512 : 2048;
        try {
            figures.add(SlowTierTtftMeasure.measure(ttftDense, threads, slowTokens, 16, quick ? 2 : Trials.FULL_ROUNDS, Log.stream("bench")));
        } catch (RuntimeException e) {
            figures.add(Figure.missing(SlowTierTtftMeasure.figureName(slowTokens), "s", PrefixTtftMeasure.BASELINE,
                    SlowTierTtftMeasure.GOAL, "not measured: " + e));
        }

        progress.step("decoding constrained to a JSON schema against unconstrained, and the mask's cost per token");
        try {
            figures.addAll(ConstrainedDecodeMeasure.figures(decodeMoe, threads, quick ? 48 : 160, quick ? 3 : Trials.FULL_ROUNDS,
                    quick ? 3 : Trials.SECOND_LOOK_ROUNDS));
            figures.addAll(ConstrainedDecodeMeasure.largeVocabularyFigures(quick ? 32_000 : 151_643, quick ? 48 : 160, quick ? 3 : 7));
        } catch (RuntimeException e) {
            figures.add(Figure.missing("constrained_decode_tokens_per_s", "tokens/s", ConstrainedDecodeMeasure.BASELINE,
                    ConstrainedDecodeMeasure.RATE_GOAL, "not measured: " + e));
        }

        progress.step("expert masters on DISK under a DRAM budget: pager against static streaming and the disk bound");
        figures.addAll(DiskExpertMeasure.figures(diskMoe, work.resolve("expert-disk"), threads, quick ? 4 : 16, quick ? 4 : 16,
                quick ? 3 : 5, Log.stream("bench")));
        progress.step("done");
        return figures;
    }
}
