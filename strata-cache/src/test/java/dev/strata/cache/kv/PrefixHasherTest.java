package dev.strata.cache.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.ObjectKey;
import dev.strata.testing.Property;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Determinism and the properties of {@link PrefixHasher}'s chained block keys.
 *
 * <p><b>Golden values.</b> {@link #goldenKeysPinTheSchemeOfThisVersion()} holds keys computed once
 * and written into this test. They fail the build when the scheme changes (the hash, the order or
 * encoding of what is hashed, the context fields) while {@link PrefixHasher#VERSION} stays
 * {@value PrefixHasher#VERSION}: processes of different builds attached to one pool would then
 * miss every shared block silently. Change the scheme only together with a new
 * {@code VERSION}, and then replace the golden values (the test names the version they belong
 * to).
 */
class PrefixHasherTest {

    @Test
    void anotherJvmComputesTheSameKeys() throws Exception {
        List<String> expected = PrefixHashChild.lines();
        // the child runs interpreted, the parent compiled: the keys may depend on neither
        Process child = PrefixHashChild.start("-Xint", "-XX:-UseCompressedOops");
        List<String> got = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                got.add(line);
            }
        }
        assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("child JVM finished").isTrue();
        assertThat(child.exitValue()).isZero();
        assertThat(got).last().isEqualTo("done");
        assertThat(got.subList(0, got.size() - 1)).containsExactlyElementsOf(expected);
        assertThat(expected).hasSizeGreaterThan(7 * 5); // every context hashed several blocks
        assertThat(new HashSet<>(expected.stream().map(l -> l.substring(l.lastIndexOf(' ') + 1)).toList()))
                .as("no two (context, sequence, block) share a key")
                .hasSize(expected.size());
    }

    /** See the class comment: a failure here means the scheme changed without a new VERSION. */
    @Test
    void goldenKeysPinTheSchemeOfThisVersion() {
        assertThat(PrefixHasher.VERSION).as("golden values below belong to version 1").isEqualTo(1);
        List<PrefixHashContext> contexts = PrefixHashChild.contexts();
        List<int[]> sequences = PrefixHashChild.sequences();
        KvGeometry g = new KvGeometry(80, 8, 128, KvDtype.FP16, 16);
        assertThat(ModelFingerprint.of("llama-2-70b", g)).hasToString("cc2dcb13e8043e189db0cdab09e3ed62");
        PrefixHasher base = new PrefixHasher(contexts.get(0));
        assertThat(base.root()).hasToString("4d129ba192ff2b500899e19aa2289c59");
        ObjectKey[] counting = base.chain(sequences.get(0), 100);
        assertThat(counting[0]).hasToString("19babc0aed4ba95967ba6e3e2f226090");
        assertThat(counting[5]).hasToString("4e8dad39dc49b34cbf73a7742c2aad3b");
        ObjectKey[] negative = new PrefixHasher(contexts.get(6)).chain(sequences.get(1), sequences.get(1).length);
        assertThat(negative[1]).hasToString("81ff9c796e61375dbf3265568718335b");
        ObjectKey[] odd = new PrefixHasher(contexts.get(3)).chain(sequences.get(0), 100);
        assertThat(odd[6]).hasToString("858decb5760d843890398191b6f4d67a");
    }

    @Test
    void keysDifferWhenAnyContextFieldDiffers() {
        List<PrefixHashContext> contexts = PrefixHashChild.contexts();
        int[] tokens = PrefixHashChild.sequences().get(0);
        Set<ObjectKey> roots = new HashSet<>();
        Set<ObjectKey> firstKeys = new HashSet<>();
        for (PrefixHashContext c : contexts) {
            PrefixHasher h = new PrefixHasher(c);
            roots.add(h.root());
            firstKeys.add(h.chain(tokens, 96)[0]);
        }
        assertThat(roots).hasSize(contexts.size());
        assertThat(firstKeys).hasSize(contexts.size());

        // adapter and salt are length-prefixed: moving a character from one to the other changes the key
        ObjectKey model = ModelFingerprint.of("m", new KvGeometry(2, 2, 8, KvDtype.BF16, 16));
        PrefixHasher a = new PrefixHasher(new PrefixHashContext(model, KvDtype.BF16, 16, "ab", "c"));
        PrefixHasher b = new PrefixHasher(new PrefixHashContext(model, KvDtype.BF16, 16, "a", "bc"));
        PrefixHasher c = new PrefixHasher(new PrefixHashContext(model, KvDtype.BF16, 16, "", "abc"));
        assertThat(Set.of(a.root(), b.root(), c.root())).hasSize(3);
        // null adapter and salt mean none
        assertThat(new PrefixHasher(new PrefixHashContext(model, KvDtype.BF16, 16, null, null)).root())
                .isEqualTo(new PrefixHasher(new PrefixHashContext(model, KvDtype.BF16, 16, "", "")).root());
    }

    @Test
    void aChangedTokenChangesItsBlockAndEveryLaterOneOnly() {
        Property.forAll("prefix hash token change", 200, random -> {
            PrefixHasher h = randomHasher(random);
            int bt = h.blockTokens();
            int[] tokens = randomTokens(random, bt * (1 + random.nextInt(12)) + random.nextInt(bt));
            int p = random.nextInt(tokens.length);
            int[] changed = tokens.clone();
            changed[p] = random.nextBoolean() ? tokens[p] ^ (1 << random.nextInt(32)) : tokens[p] + 1;
            ObjectKey[] before = h.chain(tokens, tokens.length);
            ObjectKey[] after = h.chain(changed, changed.length);
            assertThat(after).hasSameSizeAs(before);
            for (int b = 0; b < before.length; b++) {
                if (b < p / bt) {
                    assertThat(after[b]).as("block %d before the change at %d", b, p).isEqualTo(before[b]);
                } else {
                    assertThat(after[b]).as("block %d from the change at %d", b, p).isNotEqualTo(before[b]);
                }
            }
        });
    }

    @Test
    void chainEqualsIteratingNextAndChainInto() {
        Property.forAll("prefix hash chain", 100, random -> {
            PrefixHasher h = randomHasher(random);
            int[] tokens = randomTokens(random, random.nextInt(20 * h.blockTokens()));
            int length = random.nextInt(tokens.length + 1);
            ObjectKey[] keys = h.chain(tokens, length);
            ObjectKey parent = h.root();
            for (int b = 0; b < keys.length; b++) {
                parent = h.next(parent, tokens, b * h.blockTokens());
                assertThat(keys[b]).isEqualTo(parent);
            }
            long[] raw = new long[2 * keys.length + 2];
            Arrays.fill(raw, 0x7777L);
            assertThat(h.chainInto(tokens, length, raw)).isEqualTo(keys.length);
            for (int b = 0; b < keys.length; b++) {
                assertThat(new ObjectKey(raw[2 * b], raw[2 * b + 1])).isEqualTo(keys[b]);
            }
            assertThat(raw[2 * keys.length]).isEqualTo(0x7777L); // nothing written past the keys
        });
    }

    @Test
    void aPrefixsKeysArePrefixOfTheLongerSequencesKeys() {
        Property.forAll("prefix hash prefix", 100, random -> {
            PrefixHasher h = randomHasher(random);
            int[] tokens = randomTokens(random, random.nextInt(30 * h.blockTokens()));
            ObjectKey[] all = h.chain(tokens, tokens.length);
            int cut = random.nextInt(tokens.length + 1);
            ObjectKey[] prefix = h.chain(Arrays.copyOf(tokens, cut), cut);
            assertThat(prefix).containsExactly(Arrays.copyOf(all, prefix.length));
            assertThat(h.chain(tokens, cut)).containsExactly(prefix);
        });
    }

    @Test
    void onlyFullBlocksHaveKeys() {
        PrefixHasher h = new PrefixHasher(PrefixHashChild.contexts().get(3)); // 13-token blocks
        int[] tokens = randomTokens(new SplittableRandom(3), 13 * 4 + 12);
        assertThat(h.chain(tokens, tokens.length)).hasSize(4);
        assertThat(h.chain(tokens, 12)).isEmpty();
        assertThat(h.chain(tokens, 13)).hasSize(1);
        assertThat(h.chain(tokens, 0)).isEmpty();
        assertThat(h.chainInto(tokens, 12, new long[0])).isZero();
        // the partial block's tokens do not affect the full blocks' keys
        int[] other = tokens.clone();
        other[other.length - 1] ^= 0x55;
        assertThat(h.chain(other, other.length)).containsExactly(h.chain(tokens, tokens.length));
        assertThatThrownBy(() -> h.next(h.root(), tokens, tokens.length - 12))
                .isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void tokenIdsAbove2To31AreDistinctTokens() {
        PrefixHasher h = new PrefixHasher(PrefixHashChild.contexts().get(0));
        Set<ObjectKey> keys = new HashSet<>();
        // the same low 31 bits with and without the top bit, and values that sign-extend differently
        int[] ids = {0x7FFFFFFF, -1, 0, Integer.MIN_VALUE, 1, 0x80000001, 0xFFFF, -0x10000};
        for (int id : ids) {
            int[] tokens = new int[16];
            Arrays.fill(tokens, 5);
            tokens[random(id)] = id;
            keys.add(h.chain(tokens, 16)[0]);
        }
        assertThat(keys).hasSize(ids.length);
        // a token in the high half of a word must not be confused with its neighbour's sign bits
        int[] x = new int[16];
        int[] y = new int[16];
        x[0] = -1;
        x[1] = 0;
        y[0] = 0;
        y[1] = -1;
        assertThat(h.chain(x, 16)[0]).isNotEqualTo(h.chain(y, 16)[0]);
        // 13-token blocks: the last token is padded, -1 must still differ from the padding's absence
        PrefixHasher odd = new PrefixHasher(PrefixHashChild.contexts().get(3));
        int[] p = new int[13];
        int[] q = new int[13];
        p[12] = -1;
        assertThat(odd.chain(p, 13)[0]).isNotEqualTo(odd.chain(q, 13)[0]);
    }

    @Test
    void rejectsLengthsOutsideTheArray() {
        PrefixHasher h = new PrefixHasher(PrefixHashChild.contexts().get(0));
        assertThatThrownBy(() -> h.chain(new int[10], 11)).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("11");
        assertThatThrownBy(() -> h.chain(new int[10], -1)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> h.chainInto(new int[32], 32, new long[3])).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("3 longs");
    }

    @Test
    void contextRejectsMissingFields() {
        ObjectKey model = ObjectKey.of(7);
        assertThatThrownBy(() -> new PrefixHashContext(null, KvDtype.FP16, 16, "", ""))
                .hasMessageContaining("fingerprint");
        assertThatThrownBy(() -> new PrefixHashContext(model, null, 16, "", "")).hasMessageContaining("dtype");
        assertThatThrownBy(() -> new PrefixHashContext(model, KvDtype.FP16, 0, "", "")).hasMessageContaining("0");
    }

    @Test
    void fingerprintPartsAreLengthPrefixed() {
        assertThat(ModelFingerprint.of("ab", "c")).isNotEqualTo(ModelFingerprint.of("a", "bc"));
        assertThat(ModelFingerprint.of("abc")).isNotEqualTo(ModelFingerprint.of("abc", ""));
        assertThat(ModelFingerprint.of("12345678")).isNotEqualTo(ModelFingerprint.of("12345678\0"));
        assertThat(ModelFingerprint.of("m", "x")).isEqualTo(ModelFingerprint.of("m", "x"));
        KvGeometry g = new KvGeometry(2, 2, 8, KvDtype.BF16, 16);
        // the block size is part of the hash context, not of the model
        assertThat(ModelFingerprint.of("m", g)).isEqualTo(ModelFingerprint.of("m", g.withBlockTokens(8)))
                .isNotEqualTo(ModelFingerprint.of("m", new KvGeometry(2, 2, 8, KvDtype.FP16, 16)))
                .isNotEqualTo(ModelFingerprint.of("m", new KvGeometry(2, 4, 8, KvDtype.BF16, 16)))
                .isNotEqualTo(ModelFingerprint.of("n", g));
    }

    private static int random(int id) {
        return Math.floorMod(id, 16);
    }

    private static PrefixHasher randomHasher(SplittableRandom random) {
        int bt = 1 + random.nextInt(32);
        KvDtype dtype = KvDtype.values()[random.nextInt(KvDtype.values().length)];
        ObjectKey model = new ObjectKey(random.nextLong(), random.nextLong());
        return new PrefixHasher(new PrefixHashContext(model, dtype, bt, random.nextBoolean() ? "" : "a" + random.nextInt(9),
                random.nextBoolean() ? "" : "s" + random.nextInt(9)));
    }

    private static int[] randomTokens(SplittableRandom random, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = random.nextInt(4) == 0 ? random.nextInt() : random.nextInt(152_000);
        }
        return t;
    }
}
