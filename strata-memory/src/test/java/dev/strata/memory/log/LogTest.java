package dev.strata.memory.log;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.logging.Handler;
import java.util.logging.LogManager;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

class LogTest {

    /** Runs {@code body} with standard error captured; returns what it wrote. */
    private static String stderrOf(Runnable body) {
        PrintStream saved = System.err;
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            body.run();
        } finally {
            System.setErr(saved);
        }
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void recordsHaveOneFormatOnStandardError() {
        String err = stderrOf(() -> {
            Log.info("demo", "starting the node");
            Log.warn("disk-tier", "falls back to buffered I/O");
            Log.error("bench", "scenario failed", new IllegalStateException("boom"));
        });
        assertThat(err.lines().limit(3).toList()).containsExactly("strata demo: starting the node",
                "strata disk-tier: warning: falls back to buffered I/O", "strata bench: error: scenario failed");
        assertThat(err).contains("java.lang.IllegalStateException: boom").contains("\tat ");
        assertThat(Log.failure("--budget: not a size")).isEqualTo("strata: --budget: not a size");
    }

    @Test
    void streamTurnsEachLineIntoOneRecord() {
        String err = stderrOf(() -> {
            PrintStream progress = Log.stream("bench");
            progress.printf("[  1/3    0.1s] first%n      indented second%n");
            progress.print("unterminated");
            progress.close();
        });
        assertThat(err.lines().toList()).containsExactly("strata bench: [  1/3    0.1s] first", "strata bench: indented second",
                "strata bench: unterminated");
    }

    @Test
    void javaLoggingGoesThroughTheSameFormatWithTheClassAsComponent() {
        Logger root = LogManager.getLogManager().getLogger("");
        Handler[] saved = root.getHandlers();
        try {
            String err = stderrOf(() -> {
                Log.useForJavaLogging();
                Log.useForJavaLogging(); // idempotent: one handler, one line per record
                System.Logger logger = System.getLogger("dev.strata.memory.disk.DiskTier");
                logger.log(System.Logger.Level.WARNING, "tier ''{0}'' falls back", "d0");
                logger.log(System.Logger.Level.INFO, "opened");
                logger.log(System.Logger.Level.DEBUG, "not shown");
            });
            assertThat(err.lines().toList()).containsExactly("strata disk-tier: warning: tier 'd0' falls back",
                    "strata disk-tier: opened");
        } finally {
            for (Handler h : root.getHandlers()) {
                root.removeHandler(h);
            }
            for (Handler h : saved) {
                root.addHandler(h);
            }
        }
    }

    @Test
    void componentIsTheHyphenatedSimpleName() {
        assertThat(Log.component("dev.strata.node.peer.PeerAgent")).isEqualTo("peer-agent");
        assertThat(Log.component("dev.strata.node.rpc.RpcServer")).isEqualTo("rpc-server");
        assertThat(Log.component("")).isEmpty();
    }
}
