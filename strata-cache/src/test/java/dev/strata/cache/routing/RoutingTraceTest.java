package dev.strata.cache.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.testing.Property;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RoutingTraceTest {
    @TempDir
    Path dir;

    /** A random valid trace: distinct top-k ids per token and layer, markers in between. */
    static List<RoutingRecord> randomRecords(SplittableRandom r, RoutingTraceHeader h, int count) {
        List<RoutingRecord> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int pick = r.nextInt(10);
            if (pick == 0) {
                out.add(new RequestStart(r.nextLong(), r.nextLong()));
            } else if (pick == 1) {
                out.add(BurstStart.INSTANCE);
            } else {
                int tokens = 1 + (r.nextInt(4) == 0 ? r.nextInt(37) : 0);
                out.add(RoutingStep.of(h, RoutingPhase.values()[r.nextInt(3)], tokens, randomIds(r, h, tokens)));
            }
        }
        return out;
    }

    static int[] randomIds(SplittableRandom r, RoutingTraceHeader h, int tokens) {
        int k = h.topK();
        int[] ids = new int[h.layers() * tokens * k];
        for (int g = 0; g < h.layers() * tokens; g++) {
            for (int s = 0; s < k; s++) {
                int id;
                boolean dup;
                do {
                    id = r.nextInt(h.experts());
                    dup = false;
                    for (int p = 0; p < s; p++) {
                        dup |= ids[g * k + p] == id;
                    }
                } while (dup);
                ids[g * k + s] = id;
            }
        }
        return ids;
    }

    static RoutingTraceHeader randomHeader(SplittableRandom r) {
        int experts = 1 + r.nextInt(r.nextBoolean() ? 9 : 300);
        if (r.nextInt(8) == 0) {
            experts = 65536; // the u16 edge: id 65535 must survive
        }
        return new RoutingTraceHeader(1 + r.nextInt(7), experts, 1 + r.nextInt(Math.min(experts, 9)),
                r.nextBoolean() ? "" : "model-ß-" + r.nextInt(1000));
    }

    private List<RoutingRecord> readAll(Path file) {
        try (RoutingTraceReader in = RoutingTraceReader.open(file)) {
            List<RoutingRecord> got = new ArrayList<>();
            for (RoutingRecord rec; (rec = in.next()) != null; ) {
                got.add(rec);
            }
            assertThat(in.ending()).isEqualTo(RoutingTraceReader.Ending.CLEAN);
            return got;
        }
    }

    private Path write(String name, RoutingTraceHeader h, List<RoutingRecord> records) {
        Path file = dir.resolve(name);
        try (RoutingTraceWriter w = RoutingTraceWriter.create(file, h)) {
            records.forEach(w::write);
            assertThat(w.records()).isEqualTo(records.size());
        }
        return file;
    }

    @Test
    void writeThenReadGivesIdenticalRecords() {
        Property.forAll("trace round trip", 25, r -> {
            RoutingTraceHeader h = randomHeader(r);
            List<RoutingRecord> records = randomRecords(r, h, r.nextInt(300));
            Path file = write("t-" + r.nextInt(1 << 30) + ".strace", h, records);
            try (RoutingTraceReader in = RoutingTraceReader.open(file)) {
                assertThat(in.header()).isEqualTo(h);
            }
            assertThat(readAll(file)).isEqualTo(records);
        });
    }

    @Test
    void largestIdAndLargeStepsSurvive() {
        RoutingTraceHeader h = new RoutingTraceHeader(3, 65536, 4, "");
        int[] ids = randomIds(new SplittableRandom(7), h, 40_000); // a 960 KB record, bigger than... close to one buffer
        ids[5] = 65535;
        List<RoutingRecord> records = List.of(RoutingStep.of(h, RoutingPhase.PREFILL, 40_000, ids),
                RoutingStep.of(h, RoutingPhase.PREFILL, 90_001, randomIds(new SplittableRandom(8), h, 90_001)));
        assertThat(readAll(write("big.strace", h, records))).isEqualTo(records);
    }

    @Test
    void textFormRoundTripsAndReadsByHand() throws IOException {
        SplittableRandom r = new SplittableRandom(11);
        RoutingTraceHeader h = new RoutingTraceHeader(3, 17, 2, "tiny");
        List<RoutingRecord> records = randomRecords(r, h, 60);
        StringWriter text = new StringWriter();
        RoutingTraceText.write(text, h, records);
        Path file = dir.resolve("t.jsonl");
        Files.writeString(file, "# hand-written\n\n" + text);
        RoutingTraceText.Trace back = RoutingTraceText.read(file);
        assertThat(back.header()).isEqualTo(h);
        assertThat(back.records()).isEqualTo(records);

        RoutingTraceText.Trace hand = RoutingTraceText.parse(null, List.of(
                "{\"layers\": 2, \"experts\": 8, \"top_k\": 2}",
                "{\"request\": {\"session\": 1, \"request\": 2}}",
                "{\"step\": [[[0, 3], [5, 1]], [[2, 3], [5, 7]]], \"phase\": \"decode\"}"));
        RoutingStep s = (RoutingStep) hand.records().get(1);
        assertThat(s.tokens()).isEqualTo(2);
        assertThat(s.expert(1, 0, 0)).isEqualTo(5);
        assertThat(s.expert(0, 1, 1)).isEqualTo(3);
        assertThat(s.ids()).containsExactly(0, 3, 2, 3, 5, 1, 5, 7);
    }

    @Test
    void textErrorsNameLineAndValue() {
        String head = "{\"layers\": 2, \"experts\": 8, \"top_k\": 2}";
        assertThatThrownBy(() -> RoutingTraceText.parse(Path.of("x.jsonl"), List.of(head,
                "{\"step\": [[[0, 3], [5, 1, 2]]]}")))
                .isInstanceOf(RoutingTraceException.class).hasMessageContaining("x.jsonl at offset 2, record 0")
                .hasMessageContaining("token 0, layer 1 must list top-2").hasMessageContaining("(3 ids)");
        assertThatThrownBy(() -> RoutingTraceText.parse(null, List.of(head, "{\"burst\": 1}", "{\"step\": [[[0, 8], [5, 1]]]}")))
                .hasMessageContaining("offset 3, record 1").hasMessageContaining("expert id 8 at layer 0, token 0, slot 1");
        assertThatThrownBy(() -> RoutingTraceText.parse(null, List.of(head, "{\"step\": [[[4, 4], [5, 1]]]}")))
                .hasMessageContaining("expert id 4 appears twice");
        assertThatThrownBy(() -> RoutingTraceText.parse(null, List.of("{\"layers\": 2, \"experts\": 8, \"top_k\": 9}")))
                .hasMessageContaining("top-k must be in 1..experts (8), got 9");
        assertThatThrownBy(() -> RoutingTraceText.parse(null, List.of(head, "{\"steep\": []}")))
                .hasMessageContaining("got keys [steep]");
        assertThatThrownBy(() -> RoutingTraceText.parse(null, List.of(head, "{\"step\": [[[0, 1], [2, 3]]")))
                .hasMessageContaining("not JSON");
    }

    @Test
    void writerRefusesStepsThatDoNotFit() {
        RoutingTraceHeader h = new RoutingTraceHeader(2, 10, 3, "");
        try (RoutingTraceWriter w = RoutingTraceWriter.create(dir.resolve("w.strace"), h)) {
            assertThatThrownBy(() -> w.step(RoutingPhase.DECODE, 1, new int[] {1, 2, 3, 4, 5, 10}))
                    .hasMessageContaining("expert id 10 at layer 1, token 0, slot 2").hasMessageContaining("10 experts");
            assertThatThrownBy(() -> w.step(RoutingPhase.DECODE, 1, new int[] {1, 2, 3, 4}))
                    .hasMessageContaining("needs 2 layers × 1 tokens × top-3 = 6 expert ids, got 4");
            assertThatThrownBy(() -> w.step(RoutingPhase.DECODE, 1, new int[] {1, -1, 3, 4, 5, 6}))
                    .hasMessageContaining("expert id -1");
            RoutingTraceHeader other = new RoutingTraceHeader(2, 10, 2, "");
            assertThatThrownBy(() -> w.step(RoutingStep.of(other, RoutingPhase.DECODE, 1, new int[] {1, 2, 3, 4})))
                    .hasMessageContaining("top-2 does not fit a trace of 2 layers × top-3");
            w.step(RoutingPhase.DECODE, 1, new int[] {1, 2, 3, 4, 5, 6});
        }
        assertThat(readAll(dir.resolve("w.strace"))).hasSize(1);
    }

    // ---- bad binary input ----

    private Path goodTrace(String name, int records) {
        RoutingTraceHeader h = new RoutingTraceHeader(4, 33, 3, "fixture");
        return write(name, h, randomRecords(new SplittableRandom(name.hashCode()), h, records));
    }

    private static void patch(Path file, long offset, byte[] bytes) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(bytes), offset);
        }
    }

    private static byte[] le16(int v) {
        return ByteBuffer.allocate(2).order(ByteOrder.LITTLE_ENDIAN).putShort(0, (short) v).array();
    }

    private static byte[] le32(int v) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, v).array();
    }

    @Test
    void truncatedFinalRecordIsReportedAndEarlierRecordsStayReadable() throws IOException {
        Path file = goodTrace("trunc.strace", 50);
        List<RoutingRecord> all = readAll(file);
        // cut the file at every byte of its last two records (END and the last real record) and more
        long size = Files.size(file);
        long headerBytes = RoutingTraceFormat.HEADER_FIXED_BYTES + "fixture".length();
        SplittableRandom r = new SplittableRandom(3);
        for (int trial = 0; trial < 60; trial++) {
            long cut = trial < 30 ? size - 1 - trial : headerBytes + 1 + r.nextLong(size - headerBytes - 1);
            Path copy = dir.resolve("cut-" + trial);
            Files.write(copy, Arrays.copyOf(Files.readAllBytes(file), (int) cut));
            List<RoutingRecord> got = new ArrayList<>();
            try (RoutingTraceReader in = RoutingTraceReader.open(copy, RoutingTraceReader.TailPolicy.STOP)) {
                for (RoutingRecord rec; (rec = in.next()) != null; ) {
                    got.add(rec);
                }
                assertThat(in.ending()).isIn(RoutingTraceReader.Ending.TRUNCATED, RoutingTraceReader.Ending.UNTERMINATED);
                assertThat(all.subList(0, got.size())).isEqualTo(got);
                if (in.ending() == RoutingTraceReader.Ending.TRUNCATED) {
                    assertThat(in.problem()).contains("ends inside a record").contains("record " + got.size());
                } else {
                    assertThat(in.problem()).contains("no END record");
                }
            }
            List<RoutingRecord> strict = new ArrayList<>();
            try (RoutingTraceReader in = RoutingTraceReader.open(copy)) {
                for (RoutingRecord rec; (rec = in.next()) != null; ) {
                    strict.add(rec);
                }
                assertThat(in.ending()).isEqualTo(RoutingTraceReader.Ending.UNTERMINATED);
            } catch (RoutingTraceException e) {
                assertThat(e.getMessage()).contains(copy.toString()).contains("ends inside a record");
                assertThat(e.record()).isEqualTo(strict.size());
                assertThat(e.offset()).isGreaterThanOrEqualTo(headerBytes).isLessThan(cut);
            }
            assertThat(strict).isEqualTo(got);
        }
    }

    @Test
    void wrongMagicVersionAndHeaderAreNamed() throws IOException {
        Path file = goodTrace("hdr.strace", 5);
        Path magic = dir.resolve("magic");
        Files.copy(file, magic);
        patch(magic, 0, "NOTATRAC".getBytes());
        assertThatThrownBy(() -> RoutingTraceReader.open(magic)).isInstanceOf(RoutingTraceException.class)
                .hasMessageContaining("not a routing trace: magic 0x").hasMessageContaining(magic.toString());
        Path major = dir.resolve("major");
        Files.copy(file, major);
        patch(major, RoutingTraceFormat.MAJOR_OFFSET, le16(2));
        assertThatThrownBy(() -> RoutingTraceReader.open(major)).hasMessageContaining("major version 2.0 is not supported");
        Path unfinished = dir.resolve("unfinished");
        Files.copy(file, unfinished);
        patch(unfinished, RoutingTraceFormat.MAJOR_OFFSET, le32(0));
        assertThatThrownBy(() -> RoutingTraceReader.open(unfinished)).hasMessageContaining("header was complete");
        Path topK = dir.resolve("topk");
        Files.copy(file, topK);
        patch(topK, RoutingTraceFormat.TOP_K_OFFSET, le32(34));
        assertThatThrownBy(() -> RoutingTraceReader.open(topK)).hasMessageContaining("top-k must be in 1..experts (33), got 34");
        Path shortFile = dir.resolve("short");
        Files.write(shortFile, Arrays.copyOf(Files.readAllBytes(file), 20));
        assertThatThrownBy(() -> RoutingTraceReader.open(shortFile)).hasMessageContaining("shorter than the 52-byte header");
        assertThatThrownBy(() -> RoutingTraceReader.open(dir.resolve("absent"))).hasMessageContaining("no such file");
    }

    @Test
    void badRecordsAreNamedWithOffsetRecordAndValue() throws IOException {
        RoutingTraceHeader h = new RoutingTraceHeader(2, 10, 2, "");
        Path file = dir.resolve("rec.strace");
        try (RoutingTraceWriter w = RoutingTraceWriter.create(file, h)) {
            w.startRequest(1, 1);
            w.step(RoutingPhase.DECODE, 1, new int[] {1, 2, 3, 4});
            w.step(RoutingPhase.DECODE, 1, new int[] {5, 6, 7, 8});
        }
        long first = RoutingTraceFormat.HEADER_FIXED_BYTES;
        long step0 = first + 8 + 16 + 4;
        long step1 = step0 + 8 + 8 + 8 + 4;
        // an id out of range, with a checksum that matches (a writer bug, not corruption)
        Path badId = dir.resolve("badid");
        Files.copy(file, badId);
        rewriteStep(badId, step1, new int[] {5, 6, 7, 12});
        assertThatThrownBy(() -> drain(badId)).isInstanceOf(RoutingTraceException.class)
                .hasMessageContaining("offset " + step1 + ", record 2")
                .hasMessageContaining("expert id 12 at layer 1, token 0, slot 1 is out of range: the layer has 10 experts");
        // a flipped byte: checksum
        Path flipped = dir.resolve("flipped");
        Files.copy(file, flipped);
        patch(flipped, step0 + 8 + 8 + 3, new byte[] {0x55});
        assertThatThrownBy(() -> drain(flipped)).hasMessageContaining("offset " + step0 + ", record 1")
                .hasMessageContaining("fails its checksum");
        // a step with top-3 ids in a top-2 trace
        Path wrongK = dir.resolve("wrongk");
        Files.copy(file, wrongK);
        try (FileChannel ch = FileChannel.open(wrongK, StandardOpenOption.WRITE)) {
            ch.truncate(step1);
        }
        appendRawStep(wrongK, step1, 1, new int[] {1, 2, 3, 4, 5, 6});
        assertThatThrownBy(() -> drain(wrongK)).hasMessageContaining("record 2")
                .hasMessageContaining("holds 6 expert ids, but 2 layers × 1 tokens × top-2 needs 4")
                .hasMessageContaining("top-3 in the record, top-2 in the header");
        // a corrupt length
        Path length = dir.resolve("length");
        Files.copy(file, length);
        patch(length, step0 + 4, le32(-2));
        assertThatThrownBy(() -> drain(length)).hasMessageContaining("claims 4294967294 payload bytes");
        // bytes after END
        Path trailing = dir.resolve("trailing");
        Files.copy(file, trailing);
        Files.write(trailing, new byte[] {9}, StandardOpenOption.APPEND);
        assertThatThrownBy(() -> drain(trailing)).hasMessageContaining("bytes follow the END record");
    }

    @Test
    void randomCorruptionIsEitherReadOrRefusedCleanly() {
        Property.forAll("corrupt traces", 30, r -> {
            RoutingTraceHeader h = randomHeader(r);
            List<RoutingRecord> records = randomRecords(r, h, 1 + r.nextInt(40));
            Path file = write("fuzz-" + r.nextInt(1 << 30), h, records);
            byte[] bytes = Files.readAllBytes(file);
            int flips = 1 + r.nextInt(4);
            for (int i = 0; i < flips; i++) {
                bytes[r.nextInt(bytes.length)] ^= (byte) (1 + r.nextInt(255));
            }
            Files.write(file, bytes);
            List<RoutingRecord> got = new ArrayList<>();
            try (RoutingTraceReader in = RoutingTraceReader.open(file)) {
                for (RoutingRecord rec; (rec = in.next()) != null; ) {
                    got.add(rec);
                }
            } catch (RoutingTraceException e) {
                assertThat(e.getMessage()).startsWith("routing trace " + file);
            }
            // whatever was delivered is a prefix of what was written: a flipped byte never yields a wrong record
            assertThat(got.size()).isLessThanOrEqualTo(records.size());
            assertThat(got).isEqualTo(records.subList(0, got.size()));
        });
    }

    private static void drain(Path file) {
        try (RoutingTraceReader in = RoutingTraceReader.open(file)) {
            while (in.next() != null) {
                // read everything
            }
        }
    }

    private static void rewriteStep(Path file, long at, int[] ids) throws IOException {
        ByteBuffer rec = stepRecord(1, ids);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.write(rec, at);
        }
    }

    private static void appendRawStep(Path file, long at, int tokens, int[] ids) throws IOException {
        rewriteStep(file, at, ids);
    }

    private static ByteBuffer stepRecord(int tokens, int[] ids) {
        int payload = 8 + 2 * ids.length;
        ByteBuffer b = ByteBuffer.allocate(8 + payload + 4).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) RoutingTraceFormat.TYPE_STEP).put((byte) 0).putShort((short) 0).putInt(payload);
        b.putInt(tokens).put((byte) RoutingPhase.DECODE.code()).put((byte) 0).putShort((short) 0);
        for (int id : ids) {
            b.putShort((short) id);
        }
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(b.array(), 0, b.position());
        b.putInt((int) crc.getValue());
        return b.flip();
    }
}
