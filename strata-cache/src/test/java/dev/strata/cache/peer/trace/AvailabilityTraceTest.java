package dev.strata.cache.peer.trace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.testing.Property;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AvailabilityTraceTest {
    @TempDir
    Path dir;

    private static final String[] NAMES = {"gpu0", "gpu1", "peer \"quoted\"", "gpu-ß-7", "a\\b", "tab\tname", "x"};

    /** Random sorted samples: ties, odd times, free values from 0 to Long.MAX_VALUE. */
    static List<AvailabilitySample> randomSamples(SplittableRandom r, int count) {
        List<AvailabilitySample> out = new ArrayList<>();
        double t = r.nextInt(3) == 0 ? 0 : r.nextDouble() * 10;
        int peers = 1 + r.nextInt(NAMES.length);
        for (int i = 0; i < count; i++) {
            if (r.nextInt(4) != 0) {
                t += r.nextInt(5) == 0 ? r.nextDouble() * 1e-7 : r.nextDouble() * 37.3;
            }
            long free = switch (r.nextInt(6)) {
                case 0 -> 0;
                case 1 -> Long.MAX_VALUE;
                case 2 -> r.nextLong(1, 4097);
                default -> r.nextLong(0, 1L << 40);
            };
            out.add(new AvailabilitySample(t, NAMES[r.nextInt(peers)], free));
        }
        return out;
    }

    private static List<AvailabilitySample> readAll(AvailabilityTraceReader in) {
        List<AvailabilitySample> out = new ArrayList<>();
        for (AvailabilitySample s; (s = in.next()) != null; ) {
            out.add(s);
        }
        return out;
    }

    @Test
    void writeThenReadGivesTheSameSamples() {
        Property.forAll("availability round trip", 20, r -> {
            List<AvailabilitySample> samples = randomSamples(r, 1 + r.nextInt(300));
            Path file = dir.resolve("trace-" + r.nextInt(1 << 20) + ".jsonl");
            try (AvailabilityTraceWriter w = AvailabilityTraceWriter.create(file)) {
                samples.forEach(w::write);
                assertThat(w.samples()).isEqualTo(samples.size());
            }
            try (AvailabilityTraceReader in = AvailabilityTraceReader.open(file)) {
                assertThat(readAll(in)).isEqualTo(samples);
                assertThat(in.samples()).isEqualTo(samples.size());
                assertThat(in.line()).isEqualTo(samples.size());
            }
            assertThat(AvailabilityTrace.read(file).samples()).isEqualTo(samples);
        });
    }

    @Test
    void theWrittenLinesHaveTheDocumentedShape() {
        StringWriter text = new StringWriter();
        try (AvailabilityTraceWriter w = AvailabilityTraceWriter.of(text, "(memory)")) {
            w.write(new AvailabilitySample(0, "gpu0", 68719476736L));
            w.write(new AvailabilitySample(1.5, "gpu \"1\"", 0));
        }
        assertThat(text.toString()).isEqualTo("""
                {"t": 0.0, "peer": "gpu0", "free": 68719476736}
                {"t": 1.5, "peer": "gpu \\"1\\"", "free": 0}
                """);
    }

    @Test
    void readerSkipsBlankAndCommentLinesAndIgnoresOtherFields() {
        String text = """
                # written by hand

                {"t": 0, "peer": "gpu0", "free": 100, "note": "boot"}
                {"free": 50, "peer": "gpu1", "t": 0}
                   {"t": 2.25, "peer": "gpu0", "free": 7}
                """;
        try (AvailabilityTraceReader in = AvailabilityTraceReader.of(new StringReader(text), "(hand)")) {
            assertThat(readAll(in)).containsExactly(new AvailabilitySample(0, "gpu0", 100), new AvailabilitySample(0, "gpu1", 50),
                    new AvailabilitySample(2.25, "gpu0", 7));
            assertThat(in.line()).isEqualTo(5);
        }
    }

    /** One malformed line after two good ones: the error names file, line 3, field and value; the good ones were read. */
    private void assertBadLine(String line, String field, String value, String problem) throws Exception {
        Path file = dir.resolve("bad.jsonl");
        Files.writeString(file, "{\"t\": 1.0, \"peer\": \"gpu0\", \"free\": 4096}\n{\"t\": 2.0, \"peer\": \"gpu1\", \"free\": 8192}\n"
                + line + "\n{\"t\": 9.0, \"peer\": \"gpu0\", \"free\": 1}\n");
        List<AvailabilitySample> before = new ArrayList<>();
        try (AvailabilityTraceReader in = AvailabilityTraceReader.open(file)) {
            assertThatThrownBy(() -> {
                for (AvailabilitySample s; (s = in.next()) != null; ) {
                    before.add(s);
                }
            }).isInstanceOfSatisfying(AvailabilityTraceException.class, e -> {
                assertThat(e.source()).isEqualTo(file.toString());
                assertThat(e.line()).isEqualTo(3);
                assertThat(e.field()).isEqualTo(field);
                assertThat(e.value()).isEqualTo(value);
                assertThat(e.getMessage()).startsWith("availability trace " + file + " line 3: ").contains(problem);
                if (field != null) {
                    assertThat(e.getMessage()).contains("field '" + field + "' " + (value == null ? "is missing" : "is " + value));
                }
            });
        }
        assertThat(before).containsExactly(new AvailabilitySample(1, "gpu0", 4096), new AvailabilitySample(2, "gpu1", 8192));
        assertThatThrownBy(() -> AvailabilityTrace.read(file)).isInstanceOf(AvailabilityTraceException.class)
                .hasMessageContaining("line 3");
    }

    @Test
    void everyMalformedLineIsNamedWithItsFieldAndValue() throws Exception {
        assertBadLine("{\"t\": 1.5, \"peer\": \"gpu0\", \"free\": 10}", "t", "1.5", "earlier than 2.0 on line 2 (samples must be sorted by t)");
        assertBadLine("{\"t\": 3, \"peer\": \"gpu0\", \"free\": -4096}", "free", "-4096", "must be >= 0 bytes");
        assertBadLine("{\"peer\": \"gpu0\", \"free\": 10}", "t", null, "every sample needs a time");
        assertBadLine("{\"t\": 3, \"free\": 10}", "peer", null, "every sample names its peer");
        assertBadLine("{\"t\": 3, \"peer\": \"gpu0\"}", "free", null, "free bytes");
        assertBadLine("{\"t\": 3, \"peer\": \"gpu0\", \"free\": null}", "free", null, "free bytes");
        assertBadLine("{\"t\": 3, \"peer\": \"gpu0\", \"free\": 10", null, null, "not JSON");
        assertBadLine("t=3 peer=gpu0 free=10", null, null, "not JSON");
        assertBadLine("[3, \"gpu0\", 10]", null, null, "expected a JSON object");
        assertBadLine("{\"t\": \"3\", \"peer\": \"gpu0\", \"free\": 10}", "t", "\"3\"", "must be a number of seconds");
        assertBadLine("{\"t\": -0.5, \"peer\": \"gpu0\", \"free\": 10}", "t", "-0.5", "must be finite and >= 0");
        assertBadLine("{\"t\": 3, \"peer\": 7, \"free\": 10}", "peer", "7", "must be a non-blank string");
        assertBadLine("{\"t\": 3, \"peer\": \"  \", \"free\": 10}", "peer", "\"  \"", "must be a non-blank string");
        assertBadLine("{\"t\": 3, \"peer\": \"gpu0\", \"free\": 10.5}", "free", "10.5", "must be a whole number of bytes");
        assertBadLine("{\"t\": 3, \"peer\": \"gpu0\", \"free\": \"10\"}", "free", "\"10\"", "must be a whole number of bytes");
        assertBadLine("{\"t\": 3, \"peer\": \"gpu0\", \"free\": 99999999999999999999}", "free", "99999999999999999999",
                "does not fit in a long");
    }

    @Test
    void aMissingFileIsNamed() {
        Path absent = dir.resolve("absent.jsonl");
        assertThatThrownBy(() -> AvailabilityTraceReader.open(absent)).isInstanceOf(AvailabilityTraceException.class)
                .hasMessage("availability trace " + absent + ": no such file");
    }

    @Test
    void writerRefusesAnEarlierSampleAndWritesNothingOfIt() {
        StringWriter text = new StringWriter();
        try (AvailabilityTraceWriter w = AvailabilityTraceWriter.of(text, "(memory)")) {
            w.write(new AvailabilitySample(5, "gpu0", 1));
            w.write(new AvailabilitySample(5, "gpu1", 2));
            assertThatThrownBy(() -> w.write(new AvailabilitySample(4.5, "gpu2", 3))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("t 4.5").hasMessageContaining("previous sample's t 5.0").hasMessageContaining("gpu2");
            assertThat(w.samples()).isEqualTo(2);
        }
        assertThat(text.toString().lines()).hasSize(2);
        assertThatThrownBy(() -> AvailabilityTrace.of(List.of(new AvailabilitySample(2, "a", 1), new AvailabilitySample(1, "a", 1))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sample 1 at t 1.0 follows t 2.0");
    }

    @Test
    void samplesRefuseImpossibleValues() {
        assertThatThrownBy(() -> new AvailabilitySample(Double.NaN, "gpu0", 1)).hasMessageContaining("NaN");
        assertThatThrownBy(() -> new AvailabilitySample(1, " ", 1)).hasMessageContaining("non-blank");
        assertThatThrownBy(() -> new AvailabilitySample(1, "gpu0", -1)).hasMessageContaining("-1").hasMessageContaining("gpu0");
    }

    @Test
    void freeAtIsTheLastSampleAtOrBeforeTheTime() {
        Property.forAll("availability step functions", 25, r -> {
            List<AvailabilitySample> samples = randomSamples(r, 1 + r.nextInt(200));
            AvailabilityTrace trace = AvailabilityTrace.of(samples);
            assertThat(trace.duration()).isEqualTo(samples.getLast().t());
            assertThat(trace.peers()).isEqualTo(samples.stream().map(AvailabilitySample::peer).distinct().toList());
            for (int q = 0; q < 200; q++) {
                double t = switch (r.nextInt(3)) {
                    case 0 -> samples.get(r.nextInt(samples.size())).t();
                    case 1 -> r.nextDouble() * (trace.duration() + 10);
                    default -> Math.nextDown(samples.get(r.nextInt(samples.size())).t());
                };
                String peer = trace.peers().get(r.nextInt(trace.peers().size()));
                long expected = 0; // before the peer's first sample
                for (AvailabilitySample s : samples) {
                    if (s.t() <= t && s.peer().equals(peer)) {
                        expected = s.free();
                    }
                }
                assertThat(trace.freeAt(peer, t)).as("peer %s at t %s", peer, t).isEqualTo(expected);
                assertThat(trace.freeAt(trace.peerIndex(peer), t)).isEqualTo(expected);
            }
            int total = 0;
            for (String p : trace.peers()) {
                total += trace.sampleCount(p);
            }
            assertThat(total).isEqualTo(samples.size());
        });
    }

    @Test
    void anUnknownPeerIsNamed() {
        AvailabilityTrace trace = AvailabilityTrace.of(List.of(new AvailabilitySample(0, "gpu0", 10)));
        assertThatThrownBy(() -> trace.freeAt("gpu9", 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no peer 'gpu9'").hasMessageContaining("[gpu0]");
        assertThatThrownBy(() -> trace.freeAt(1, 1)).hasMessageContaining("peer index 1 is outside [0, 1)");
        assertThat(trace.freeAt("gpu0", 1e9)).isEqualTo(10);
    }
}
