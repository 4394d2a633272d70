package dev.strata.analysis.kvtrace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.analysis.kvsim.PrefixTrace;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MooncakeTraceReaderTest {
    @TempDir
    Path dir;

    private Path file(String... lines) throws IOException {
        Path p = dir.resolve("trace.jsonl");
        Files.writeString(p, String.join("\n", lines) + "\n");
        return p;
    }

    private static List<TraceRequest> readAll(Path p, int blockTokens) {
        List<TraceRequest> out = new ArrayList<>();
        MooncakeTraceReader.forEach(p, blockTokens, out::add);
        return out;
    }

    @Test
    void readsRequestsInOrderSkippingBlankLinesAndUnknownFields() throws IOException {
        Path p = file("{\"timestamp\": 0, \"input_length\": 1025, \"output_length\": 7, \"hash_ids\": [4, 9, 13]}",
                "",
                "{\"timestamp\": 27.0, \"input_length\": 512, \"output_length\": 0, \"hash_ids\": [4], \"session\": \"x\"}",
                "{\"timestamp\": 27, \"input_length\": 0, \"output_length\": 3, \"hash_ids\": []}");
        List<TraceRequest> r = readAll(p, 512);
        assertThat(r).containsExactly(new TraceRequest(0, 1025, 7, new long[] {4, 9, 13}),
                new TraceRequest(27, 512, 0, new long[] {4}), new TraceRequest(27, 0, 3, new long[0]));
    }

    @Test
    void readsTheShippedMooncakeTrace() {
        // tests run in this module's directory; the repository root is its parent
        Path mooncake = Path.of("").toAbsolutePath().getParent().resolve(MooncakeTraceReader.SHIPPED_TRACE);
        assertThat(mooncake).isRegularFile();
        PrefixTrace t = PrefixTrace.read(mooncake, 512);
        assertThat(t.requestCount()).isEqualTo(3993);
        assertThat(t.blockCount()).isEqualTo(43924);
    }

    private void assertBad(String line, int lineNumber, String problem) throws IOException {
        Path p = file("{\"timestamp\": 5, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 2]}", line);
        assertThatThrownBy(() -> readAll(p, 512)).isInstanceOf(TraceFormatException.class)
                .hasMessage(p + ":" + lineNumber + ": " + problem)
                .satisfies(e -> assertThat(((TraceFormatException) e).line()).isEqualTo(lineNumber));
    }

    @Test
    void namesFileLineAndProblemForEachKindOfBadLine() throws IOException {
        Path truncated = file("{\"timestamp\": 6, \"input_length\": 10");
        assertThatThrownBy(() -> readAll(truncated, 512)).isInstanceOf(TraceFormatException.class)
                .hasMessageStartingWith(truncated + ":1: bad JSON: Unexpected end-of-input");
        assertBad("[1, 2]", 2, "expected a JSON object, found array");
        assertBad("{\"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}", 2, "missing field 'timestamp'");
        assertBad("{\"timestamp\": 6, \"input_length\": 10, \"output_length\": 1}", 2, "missing field 'hash_ids'");
        assertBad("{\"timestamp\": 6, \"input_length\": -5, \"output_length\": 1, \"hash_ids\": []}", 2, "input_length -5 is negative");
        assertBad("{\"timestamp\": 6, \"input_length\": 5, \"output_length\": -1, \"hash_ids\": [1]}", 2, "output_length -1 is negative");
        assertBad("{\"timestamp\": 6, \"input_length\": \"lots\", \"output_length\": 1, \"hash_ids\": [1]}", 2,
                "input_length must be a whole number, found \"lots\"");
        assertBad("{\"timestamp\": 6.5, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1]}", 2,
                "timestamp must be a whole number, found 6.5");
        assertBad("{\"timestamp\": 6, \"input_length\": 1100, \"output_length\": 1, \"hash_ids\": [1, 2]}", 2,
                "hash_ids has 2 ids but input_length 1100 spans 3 blocks of 512 tokens");
        assertBad("{\"timestamp\": 6, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": 7}", 2,
                "hash_ids must be an array of integers, found number");
        assertBad("{\"timestamp\": 6, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [\"a\"]}", 2,
                "hash_ids[0] is \"a\", not an integer");
        assertBad("{\"timestamp\": 4, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}", 2,
                "timestamp 4 goes backwards (the previous request is at 5)");
    }

    @Test
    void theBlockSizeDecidesHowManyIdsAPromptNeeds() throws IOException {
        Path p = file("{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 2]}");
        assertThat(readAll(p, 512)).hasSize(1);
        assertThatThrownBy(() -> readAll(p, 1024)).isInstanceOf(TraceFormatException.class)
                .hasMessageEndingWith(":1: hash_ids has 2 ids but input_length 600 spans 1 blocks of 1024 tokens");
        assertThatThrownBy(() -> readAll(p, 0)).hasMessageContaining("block size must be positive, got 0");
    }

    @Test
    void aMissingFileOrADirectoryIsNamed() {
        Path missing = dir.resolve("nope.jsonl");
        assertThatThrownBy(() -> readAll(missing, 512)).isInstanceOf(TraceFormatException.class)
                .hasMessage(missing + ": no such trace file");
        assertThatThrownBy(() -> readAll(dir, 512)).isInstanceOf(TraceFormatException.class)
                .hasMessage(dir + ": is a directory, not a trace file");
    }

    @Test
    void streamsOneRequestAtATime() throws IOException {
        Path p = file("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}",
                "{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [2]}",
                "not json at all");
        try (MooncakeTraceReader r = new MooncakeTraceReader(p, 512)) {
            assertThat(r.next().hashId(0)).isEqualTo(1);
            assertThat(r.next().hashId(0)).isEqualTo(2);
            assertThat(r.lineNumber()).isEqualTo(2);
            assertThatThrownBy(r::next).isInstanceOf(TraceFormatException.class).hasMessageStartingWith(p + ":3: bad JSON");
        }
    }
}
