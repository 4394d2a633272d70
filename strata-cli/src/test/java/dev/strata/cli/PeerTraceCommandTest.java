package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.peer.trace.AvailabilityTrace;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PeerTraceCommandTest {
    @TempDir
    Path dir;

    private static final String[] SMALL = {"--peers", "5", "--device-capacity", "24GiB", "--duration", "1800", "--step", "3",
            "--diurnal-period", "600", "--reclaims-per-hour", "8", "--reclaim-hold", "120", "--seed", "11"};

    private static String[] generate(Path out, String... knobs) {
        String[] head = {"trace", "peers", "generate", "--out", out.toString()};
        String[] all = new String[head.length + knobs.length];
        System.arraycopy(head, 0, all, 0, head.length);
        System.arraycopy(knobs, 0, all, head.length, knobs.length);
        return all;
    }

    @Test
    void generateThenStats() {
        Path out = dir.resolve("peers.jsonl");
        CliRun g = CliRun.of(generate(out, SMALL));
        assertThat(g.status()).as(g.err()).isZero();
        assertThat(g.out()).startsWith("wrote " + out + ": 3005 samples, 5 peers × 24 GiB, 1800.0 s at a 3.00 s step, seed 11, ")
                .contains("reclaims");
        AvailabilityTrace trace = AvailabilityTrace.read(out);
        assertThat(trace.peers()).containsExactly("gpu0", "gpu1", "gpu2", "gpu3", "gpu4");
        assertThat(trace.duration()).isEqualTo(1800);

        CliRun s = CliRun.of("trace", "peers", "stats", out.toString(), "--device-capacity", "24GiB");
        assertThat(s.status()).as(s.err()).isZero();
        assertThat(s.out()).contains("5 peers, 3005 samples, 1800.0 s").contains("of 24 GiB: mean utilisation 0.4")
                .contains("reclaims (falls >= 2.40 GiB in one step)").contains("gpu4");
        CliRun again = CliRun.of(generate(dir.resolve("again.jsonl"), SMALL));
        assertThat(again.status()).isZero();
        assertThat(AvailabilityTrace.read(dir.resolve("again.jsonl")).samples()).isEqualTo(trace.samples());

        CliRun noCapacity = CliRun.of("trace", "peers", "stats", out.toString(), "--show", "2");
        assertThat(noCapacity.status()).isZero();
        assertThat(noCapacity.out()).doesNotContain("mean utilisation").contains("... 3 more peers");
    }

    @Test
    void badInputEndsWithOneLineAndStatus2() throws Exception {
        CliRun knob = CliRun.of(generate(dir.resolve("x.jsonl"), "--mean-utilisation", "1.5"));
        assertThat(knob.status()).isEqualTo(2);
        assertThat(knob.err().strip()).isEqualTo("strata: mean utilisation must be in (0, 1), got 1.5");
        CliRun size = CliRun.of(generate(dir.resolve("y.jsonl"), "--device-capacity", "lots"));
        assertThat(size.status()).isEqualTo(2);
        assertThat(size.err()).contains("--device-capacity: not a size: 'lots'");
        CliRun old = CliRun.of(generate(dir.resolve("z.jsonl"), "--capacity", "24GiB")); // strata node's pool capacity
        assertThat(old.status()).isEqualTo(2);
        assertThat(old.err()).contains("Unknown option").contains("'--capacity'");

        Path bad = dir.resolve("bad.jsonl");
        Files.writeString(bad, "{\"t\": 0, \"peer\": \"gpu0\", \"free\": 10}\n{\"t\": 1, \"peer\": \"gpu0\", \"free\": -10}\n");
        CliRun s = CliRun.of("trace", "peers", "stats", bad.toString());
        assertThat(s.status()).isEqualTo(2);
        assertThat(s.err().strip()).isEqualTo("strata: availability trace " + bad + " line 2: field 'free' is -10: must be >= 0 bytes");
        CliRun missing = CliRun.of("trace", "peers", "stats", dir.resolve("absent").toString());
        assertThat(missing.status()).isEqualTo(2);
        assertThat(missing.err()).contains("absent: no such file");
    }
}
