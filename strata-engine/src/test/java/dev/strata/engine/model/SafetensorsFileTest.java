package dev.strata.engine.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafetensorsFileTest {
    @TempDir
    Path dir;

    /** Writes the 8-byte length, the header text and {@code data} by hand. */
    static Path file(Path p, String header, byte[] data) throws Exception {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(h.length).array());
        out.writeBytes(h);
        out.writeBytes(data);
        Files.write(p, out.toByteArray());
        return p;
    }

    static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < n; i++) {
            b[i] = (byte) r.nextInt(256);
        }
        return b;
    }

    static byte[] floats(float... v) {
        ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) {
            b.putFloat(f);
        }
        return b.array();
    }

    @Test
    void readsTensorsOfEachDtypeAsSlicesOfOneMapping() throws Exception {
        // a: F32 [2,3] = 24 bytes at [0,24); b: BF16 [3] = 6 bytes at [24,30); c: F16 [1,2] = 4 bytes at [30,34)
        ByteArrayOutputStream data = new ByteArrayOutputStream();
        data.writeBytes(floats(1.5f, -2.25f, 3f, 0.125f, -7f, 1e-3f));
        ByteBuffer bf = ByteBuffer.allocate(6).order(ByteOrder.LITTLE_ENDIAN);
        bf.putShort((short) 0x3FC0).putShort((short) 0xC040).putShort((short) 0x4049); // 1.5, -3.0, 3.140625
        data.writeBytes(bf.array());
        ByteBuffer hf = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        hf.putShort(Float.floatToFloat16(0.5f)).putShort(Float.floatToFloat16(-6f));
        data.writeBytes(hf.array());
        String header = """
                {"__metadata__": {"format": "pt"}, "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                 "b": {"dtype": "BF16", "shape": [3], "data_offsets": [24, 30]},
                 "c": {"dtype": "F16", "shape": [1, 2], "data_offsets": [30, 34]}}   """;
        Path p = file(dir.resolve("m.safetensors"), header, data.toByteArray());
        try (Arena arena = Arena.ofShared()) {
            SafetensorsFile f = SafetensorsFile.open(p, arena);
            assertThat(f.names()).containsExactly("a", "b", "c");
            assertThat(f.metadata()).containsEntry("format", "pt");
            Tensor a = f.tensor("a");
            assertThat(a.shape()).containsExactly(2, 3);
            assertThat(a.dtype()).isEqualTo(DType.F32);
            assertThat(a.byteSize()).isEqualTo(24);
            assertThat(a.getFloat(0)).isEqualTo(1.5f);
            assertThat(a.getFloat(5)).isEqualTo(1e-3f);
            Tensor b = f.tensor("b");
            assertThat(new float[] {b.getFloat(0), b.getFloat(1), b.getFloat(2)}).containsExactly(1.5f, -3f, 3.140625f);
            Tensor c = f.tensor("c");
            assertThat(new float[] {c.getFloat(0), c.getFloat(1)}).containsExactly(0.5f, -6f);
            long headerLen = header.getBytes(StandardCharsets.UTF_8).length;
            assertThat(f.location("b")).isEqualTo(new ByteRange("b", p, 8 + headerLen + 24, 6));
            byte[] onDisk = Files.readAllBytes(p);
            assertThat(b.data().toArray(ValueLayout.JAVA_BYTE))
                    .isEqualTo(java.util.Arrays.copyOfRange(onDisk, (int) (8 + headerLen + 24), (int) (8 + headerLen + 30)));
            assertThat(a.data().isReadOnly()).isTrue();
            assertThatThrownBy(() -> f.tensor("zz")).hasMessageContaining("no tensor 'zz'").hasMessageContaining(p.toString());
        }
    }

    private void fails(String header, byte[] data, String... parts) throws Exception {
        Path p = file(dir.resolve("bad.safetensors"), header, data);
        try (Arena arena = Arena.ofShared()) {
            var a = assertThatThrownBy(() -> SafetensorsFile.open(p, arena)).isInstanceOf(ModelFormatException.class)
                    .hasMessageContaining(p.toString());
            for (String s : parts) {
                a.hasMessageContaining(s);
            }
        }
    }

    @Test
    void malformedFilesAreRefusedWithTheirProblem() throws Exception {
        byte[] d = random(40, 7);
        fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 20]}}", d,
                "tensor 'w'", "holds 20 bytes", "[2, 3]", "needs 24");
        fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                + " \"v\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", d, "'w' [0, 8)", "'v' [4, 12)", "overlap");
        fails("{\"w\": {\"dtype\": \"I64\", \"shape\": [2], \"data_offsets\": [0, 16]}}", d, "tensor 'w'", "dtype 'I64'", "BF16, F16, F32");
        fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [32, 48]}}", d, "tensor 'w'", "[32, 48]", "40 bytes");
        fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", d, "tensor 'w'", "-1");
        fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4]}}", d, "tensor 'w'", "data_offsets");
        fails("{\"w\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", d, "tensor 'w'", "missing dtype");
        fails("{\"w\": ", d, "not valid JSON");
        fails("[1, 2]", d, "JSON object");
    }

    @Test
    void headerLengthBeyondFileOrInsaneIsRefused() throws Exception {
        Path p = dir.resolve("short.safetensors");
        ByteBuffer b = ByteBuffer.allocate(20).order(ByteOrder.LITTLE_ENDIAN).putLong(500);
        Files.write(p, b.array());
        try (Arena arena = Arena.ofShared()) {
            assertThatThrownBy(() -> SafetensorsFile.open(p, arena)).isInstanceOf(ModelFormatException.class)
                    .hasMessageContaining(p.toString()).hasMessageContaining("header length 500").hasMessageContaining("20 bytes");
            Files.write(p, ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(-5).array());
            assertThatThrownBy(() -> SafetensorsFile.open(p, arena)).hasMessageContaining("not sane");
            Files.write(p, new byte[] {1, 2, 3});
            assertThatThrownBy(() -> SafetensorsFile.open(p, arena)).hasMessageContaining("3 bytes is too short");
            assertThatThrownBy(() -> SafetensorsFile.open(dir.resolve("absent.safetensors"), arena))
                    .hasMessageContaining("absent.safetensors").hasMessageContaining("no such file");
        }
    }

    @Test
    void shardedIndexMapsTensorsToTheirFiles() throws Exception {
        byte[] d1 = random(24, 1);
        byte[] d2 = random(12, 2);
        file(dir.resolve("model-00001-of-00002.safetensors"),
                "{\"x\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 24]}}", d1);
        file(dir.resolve("model-00002-of-00002.safetensors"),
                "{\"y\": {\"dtype\": \"BF16\", \"shape\": [3, 2], \"data_offsets\": [0, 12]}}", d2);
        Files.writeString(dir.resolve(WeightFiles.INDEX_FILE), """
                {"metadata": {"total_size": 36}, "weight_map": {"x": "model-00001-of-00002.safetensors",
                 "y": "model-00002-of-00002.safetensors"}}""");
        try (WeightFiles w = WeightFiles.open(dir)) {
            assertThat(w.files()).hasSize(2);
            assertThat(w.names()).containsExactly("x", "y");
            assertThat(w.tensor("y").data().toArray(ValueLayout.JAVA_BYTE)).isEqualTo(d2);
            assertThat(w.tensor("x").data().toArray(ValueLayout.JAVA_BYTE)).isEqualTo(d1);
            assertThat(w.location("y").file()).isEqualTo(dir.resolve("model-00002-of-00002.safetensors"));
            assertThat(w.tensorBytes()).isEqualTo(36);
            assertThatThrownBy(() -> w.tensor("z")).hasMessageContaining("no weight file holds tensor 'z'");
        }
        Files.writeString(dir.resolve(WeightFiles.INDEX_FILE), """
                {"weight_map": {"x": "model-00001-of-00002.safetensors", "q": "model-00002-of-00002.safetensors"}}""");
        assertThatThrownBy(() -> WeightFiles.open(dir)).isInstanceOf(ModelFormatException.class)
                .hasMessageContaining("tensor 'q'").hasMessageContaining("missing from")
                .hasMessageContaining("model-00002-of-00002.safetensors");
        Files.writeString(dir.resolve(WeightFiles.INDEX_FILE), """
                {"weight_map": {"x": "model-00009-of-00009.safetensors"}}""");
        assertThatThrownBy(() -> WeightFiles.open(dir)).hasMessageContaining("model-00009-of-00009.safetensors")
                .hasMessageContaining("no such file");
        Files.writeString(dir.resolve(WeightFiles.INDEX_FILE), """
                {"weight_map": {"x": "../elsewhere.safetensors"}}""");
        assertThatThrownBy(() -> WeightFiles.open(dir)).hasMessageContaining("not a file of the model directory");
        Files.writeString(dir.resolve(WeightFiles.INDEX_FILE), "{\"weight_map\": {}}");
        assertThatThrownBy(() -> WeightFiles.open(dir)).hasMessageContaining("weight_map");
        Files.delete(dir.resolve(WeightFiles.INDEX_FILE));
        assertThatThrownBy(() -> WeightFiles.open(dir)).hasMessageContaining("no model.safetensors or model.safetensors.index.json");
    }
}
