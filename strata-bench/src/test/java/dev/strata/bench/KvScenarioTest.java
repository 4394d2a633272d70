package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.analysis.kvtrace.MooncakeTraceReader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KvScenarioTest {
    @TempDir
    Path dir;

    /** Tests run in this module's directory; the repository root is its parent. */
    private static final Path CHECKOUT = Path.of("").toAbsolutePath().getParent();

    @Test
    void withoutTraceItReplaysTheShippedMooncakeTrace() {
        Path shipped = CHECKOUT.resolve(MooncakeTraceReader.SHIPPED_TRACE);
        assertThat(shipped).isRegularFile();
        assertThat(KvScenario.trace(null, CHECKOUT)).isEqualTo(shipped);
        assertThat(KvScenario.trace(null, dir)).as("a checkout without the trace").isNull();
        assertThat(TraceReplayMeasure.conversationTrace(CHECKOUT)).isEqualTo(CHECKOUT.resolve(MooncakeTraceReader.SHIPPED_CONVERSATION_TRACE))
                .isRegularFile();
        assertThat(TraceReplayMeasure.conversationTrace(dir)).isNull();
    }

    @Test
    void traceNamesTheFileReplayedAndAMissingOneFailsNamingIt() throws IOException {
        Path mine = Files.writeString(dir.resolve("mine.jsonl"), "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [7]}\n");
        assertThat(KvScenario.trace(mine, CHECKOUT)).isEqualTo(mine);
        Path missing = dir.resolve("nope.jsonl");
        assertThatThrownBy(() -> KvScenario.trace(missing, CHECKOUT)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--trace " + missing + ": no such file");
        assertThatThrownBy(() -> KvScenario.trace(dir, CHECKOUT)).hasMessage("--trace " + dir + ": not a regular file");
    }
}
