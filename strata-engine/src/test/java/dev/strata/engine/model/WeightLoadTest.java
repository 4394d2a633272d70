package dev.strata.engine.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.serve.ServeEngine;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What becomes of served weights when their files change on disk. Copied weights
 * ({@link WeightLoad#COPY}) are the process's own: truncating or overwriting the file in place
 * changes neither a tensor nor a forward pass. Mapped weights ({@link WeightLoad#MAP}) are guarded:
 * a file truncated or rewritten in place is reported by {@link WeightFiles#check()}, naming it,
 * before anything reads the mapping (a read beyond a truncated end would fault the process), and the
 * weights stay out of service; a file replaced by rename leaves the mapping, and the check, intact.
 */
class WeightLoadTest {
    private static final int[] PROMPT = {5, 17, 42, 99, 3, 250, 7};
    private static final int STEPS = 6;

    @TempDir
    Path dir;

    private Path synth(int shards) throws IOException {
        SynthSpec small = SynthSpec.small(ModelFamily.QWEN3_MOE, 31);
        SynthSpec spec = new SynthSpec(small.family(), small.layers(), small.experts(), small.topK(), small.hidden(),
                small.intermediate(), small.expertIntermediate(), small.heads(), small.kvHeads(), small.headDim(), small.vocab(),
                small.dtype(), small.seed(), shards, small.topicClusters(), small.tieEmbeddings());
        Path model = dir.resolve("model");
        ModelSynthesizer.write(spec, model, (d, t, b, tb) -> { });
        return model;
    }

    /** Every tensor's bytes, by name. */
    private static Map<String, byte[]> bytes(WeightFiles files) {
        Map<String, byte[]> out = new LinkedHashMap<>();
        for (String n : files.names()) {
            out.put(n, files.tensor(n).data().toArray(ValueLayout.JAVA_BYTE));
        }
        return out;
    }

    /** Prefill then greedy decode steps (experts read from the weights themselves: no pager): every step's logits. */
    private static List<float[]> greedy(ModelRunner runner) {
        List<float[]> logits = new ArrayList<>();
        try (ModelRunner.Sequence s = runner.newSequence()) {
            float[] last = s.prefill(PROMPT, false)[0].clone();
            logits.add(last);
            for (int i = 0; i < STEPS; i++) {
                int next = 0;
                for (int t = 1; t < last.length; t++) {
                    next = last[t] > last[next] ? t : next;
                }
                last = s.decode(next).clone();
                logits.add(last);
            }
        }
        return logits;
    }

    private static void truncateToHalf(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(ch.size() / 2);
        }
    }

    private static void overwrite(Path file, long at, int length) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ByteBuffer junk = ByteBuffer.allocate(length);
            for (int i = 0; i < length; i++) {
                junk.put((byte) (0x5A ^ i));
            }
            ch.write(junk.flip(), at);
        }
    }

    @Test
    void copiedWeightsSurviveTheirFileBeingTruncatedAndOverwrittenInPlace() throws IOException {
        Path model = synth(1);
        Path file = model.resolve(WeightFiles.SINGLE_FILE);
        ServeEngine.Options options = ServeEngine.Options.builder().kvBlocks(16).weightLoad(WeightLoad.COPY).conclude();
        try (ServeEngine engine = new ServeEngine(model, options)) {
            WeightFiles files = engine.model().files();
            assertThat(files.load()).isEqualTo(WeightLoad.COPY);
            Map<String, byte[]> before = bytes(files);
            List<float[]> logitsBefore = greedy(engine.runner());

            long size = Files.size(file);
            overwrite(file, size / 2 + 64, 4096); // in place, in the half that stays
            truncateToHalf(file);                   // and the rest gone

            assertThat(files.problem()).isNull();
            files.check();
            Map<String, byte[]> after = bytes(files);
            assertThat(after.keySet()).containsExactlyElementsOf(before.keySet());
            for (String n : before.keySet()) {
                assertThat(after.get(n)).as(n).isEqualTo(before.get(n));
            }
            List<float[]> logitsAfter = greedy(engine.runner());
            assertThat(logitsAfter).hasSameSizeAs(logitsBefore);
            for (int i = 0; i < logitsBefore.size(); i++) {
                assertThat(logitsAfter.get(i)).as("logits of step %d", i).isEqualTo(logitsBefore.get(i));
            }
        }
    }

    @Test
    void aPagedServerCopiesAllButTheExpertsWhichItsMastersHoldOnceAndSurvivesTruncation() throws IOException {
        Path model = synth(1);
        Path file = model.resolve(WeightFiles.SINGLE_FILE);
        ServeEngine.Options options = ServeEngine.Options.builder().kvBlocks(16).expertCap(4).conclude(); // COPY by default
        try (ServeEngine engine = new ServeEngine(model, options)) {
            WeightFiles files = engine.model().files();
            int experts = 0;
            for (String n : files.names()) {
                boolean expert = ModelWeights.isExpertTensor(n);
                experts += expert ? 1 : 0;
                // the experts are read once, into the pager's masters; every other tensor is the process's own copy
                assertThat(files.tensor(n).data().isMapped()).as(n).isEqualTo(expert);
            }
            assertThat(experts).isEqualTo(2 * 8 * 3); // 2 MoE layers × 8 experts × gate, up, down
            List<float[]> logitsBefore = greedy(engine.runner());

            truncateToHalf(file);

            files.check();
            List<float[]> logitsAfter = greedy(engine.runner());
            for (int i = 0; i < logitsBefore.size(); i++) {
                assertThat(logitsAfter.get(i)).as("logits of step %d", i).isEqualTo(logitsBefore.get(i));
            }
        }
    }

    @Test
    void aMappedFileTruncatedUnderTheWeightsIsReportedNamingItAndTheWeightsStayOutOfService() throws IOException {
        Path model = synth(2);
        try (WeightFiles files = WeightFiles.open(model, WeightLoad.MAP)) {
            assertThat(files.load()).isEqualTo(WeightLoad.MAP);
            assertThat(files.files()).hasSize(2);
            files.check();
            Path second = files.files().get(1).path();
            long size = Files.size(second);
            FileTime modified = Files.getLastModifiedTime(second);

            truncateToHalf(second);

            assertThatThrownBy(files::check).isInstanceOf(ModelFileChangedException.class)
                    .hasMessageContaining(second.toString()).hasMessageContaining("truncated")
                    .hasMessageContaining(size / 2 + " bytes").hasMessageContaining("opened as " + size + " bytes")
                    .hasMessageContaining("model.load: map");
            assertThat(files.problem()).contains(second.toString());
            // sticky: the file restored to its size and modification time is still not trusted
            try (FileChannel ch = FileChannel.open(second, StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.allocate((int) (size - size / 2)), size / 2);
            }
            Files.setLastModifiedTime(second, modified);
            assertThat(Files.size(second)).isEqualTo(size);
            assertThatThrownBy(files::check).isInstanceOf(ModelFileChangedException.class).hasMessageContaining(second.toString());
        }
    }

    @Test
    void aMappedFileRewrittenInPlaceAtTheSameSizeIsReported() throws IOException {
        Path model = synth(1);
        Path file = model.resolve(WeightFiles.SINGLE_FILE);
        Files.setLastModifiedTime(file, FileTime.fromMillis(1_600_000_000_000L)); // any write from now on changes it
        try (WeightFiles files = WeightFiles.open(model, WeightLoad.MAP)) {
            files.check();
            overwrite(file, files.files().getFirst().dataStart(), 256);
            assertThatThrownBy(files::check).isInstanceOf(ModelFileChangedException.class)
                    .hasMessageContaining(file.toString()).hasMessageContaining("rewritten in place");
        }
    }

    @Test
    void aMappedFileReplacedByRenameKeepsServingTheFileAsOpened() throws IOException {
        Path model = synth(1);
        Path file = model.resolve(WeightFiles.SINGLE_FILE);
        try (WeightFiles files = WeightFiles.open(model, WeightLoad.MAP)) {
            Map<String, byte[]> before = bytes(files);
            Path replacement = dir.resolve("replacement.safetensors");
            Files.copy(file, replacement);
            truncateToHalf(replacement);
            Files.move(replacement, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);

            files.check(); // the mapping holds the file as opened, which nobody can reach by name any more
            assertThat(files.problem()).isNull();
            Map<String, byte[]> after = bytes(files);
            for (String n : before.keySet()) {
                assertThat(after.get(n)).as(n).isEqualTo(before.get(n));
            }
        }
    }

    @Test
    void copyReadsEveryShardIntoPrivateMemoryWithTheSameBytesAsTheMapping() throws IOException {
        Path model = synth(2);
        try (WeightFiles mapped = WeightFiles.open(model, WeightLoad.MAP); WeightFiles copied = WeightFiles.open(model)) {
            assertThat(copied.load()).isEqualTo(WeightLoad.COPY);
            assertThat(copied.names()).containsExactlyElementsOf(mapped.names());
            Map<String, byte[]> m = bytes(mapped);
            Map<String, byte[]> c = bytes(copied);
            for (String n : m.keySet()) {
                assertThat(c.get(n)).as(n).isEqualTo(m.get(n));
                assertThat(copied.tensor(n).data().isMapped()).as(n).isFalse();
                assertThat(mapped.tensor(n).data().isMapped()).as(n).isTrue();
            }
        }
    }
}
