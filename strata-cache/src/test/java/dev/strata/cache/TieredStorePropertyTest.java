package dev.strata.cache;

import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.Tier;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import dev.strata.testing.Property;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Random put / get / pin / unpin / remove / setPriority / view-close sequences over a tiny
 * DEVICE → HOST chain, with the store's invariants checked against a model after every step.
 */
class TieredStorePropertyTest {
    private static final long PAGE = 4096;
    private static final int KEYS = 24;

    /** What the model knows about one stored object. */
    private static final class Expected {
        final byte[] bytes;
        final Durability durability;
        PriorityClass priority;
        int pins; // explicit pins
        int views; // open views
        int protectedMask; // tier mask when it last became pinned or ACTIVE; 0 while evictable

        Expected(byte[] bytes, Durability durability, PriorityClass priority) {
            this.bytes = bytes;
            this.durability = durability;
            this.priority = priority;
        }

        boolean protectedNow() {
            return pins + views > 0 || priority == PriorityClass.ACTIVE;
        }
    }

    private record OpenView(ObjectKey key, Expected expected, ObjectView view) {
    }

    @Test
    void randomOperationsKeepEveryInvariant() {
        long[] seen = new long[5]; // demotions, promotions, drops, refused puts, evictions over all trials
        Property.forAll("tiered-store-random-ops", 30, random -> {
            StoreStats last = new Run(random).run(300);
            for (StoreTierStats m : last.tiers()) {
                seen[0] += m.demotions();
                seen[1] += m.promotions();
                seen[2] += m.drops();
                seen[4] += m.evictions();
            }
            seen[3] += last.refusedPuts();
        });
        if (System.getProperty("strata.seed") == null) {
            assertThat(java.util.Arrays.stream(seen).min().orElseThrow()).as("the runs exercised demotion, promotion, drops, refusals, eviction: %s", java.util.Arrays.toString(seen)).isPositive();
        }
    }

    private static final class Run {
        final SplittableRandom random;
        final Map<ObjectKey, Expected> live = new HashMap<>();
        final Map<ObjectKey, Expected> removedPinned = new HashMap<>();
        final List<OpenView> views = new ArrayList<>();
        final Map<String, Tier> tiersByName = new HashMap<>();
        int dropsSeen;
        String step = "start";

        Run(SplittableRandom random) {
            this.random = random;
        }

        /** Runs {@code steps} random steps; returns the store's last statistics. */
        StoreStats run(int steps) {
            try (DeviceTier dev = DeviceTier.cpu("device", 6 * PAGE); HostTier host = HostTier.create("host", 12 * PAGE)) {
                tiersByName.put("device", dev);
                tiersByName.put("host", host);
                PolicyKind[] kinds = PolicyKind.values();
                double high0 = 0.7 + 0.3 * random.nextDouble();
                double high1 = 0.7 + 0.3 * random.nextDouble();
                PromotionRule[] rules = {PromotionRule.toTop(), PromotionRule.never(), PromotionRule.oneLevelUp(), PromotionRule.toTopAfter(2)};
                TieredStore store = TieredStore.builder()
                        .tier(dev, high0, 0.4 + (high0 - 0.4) * random.nextDouble(), kinds[random.nextInt(kinds.length)])
                        .tier(host, high1, 0.4 + (high1 - 0.4) * random.nextDouble(), kinds[random.nextInt(kinds.length)])
                        .promotion(rules[random.nextInt(rules.length)])
                        .dropListener(this::dropped)
                        .build();
                try (store) {
                    for (int i = 0; i < steps; i++) {
                        step = "step " + i;
                        randomStep(store);
                        check(store);
                    }
                    StoreStats last = store.stats();
                    tearDown(store);
                    assertThat(dev.used()).as("device used after removing everything").isZero();
                    assertThat(host.used()).as("host used after removing everything").isZero();
                    return last;
                }
            }
        }

        void dropped(ObjectKey key, ObjectKind kind, Durability durability, long size, DropReason reason) {
            Expected e = live.remove(key);
            assertThat(e).as("%s: drop of %s reported for an object that is not stored (twice?)", step, key).isNotNull();
            assertThat(durability).as("%s: BACKED %s dropped", step, key).isEqualTo(Durability.LOSSY);
            assertThat(e.durability).isEqualTo(Durability.LOSSY);
            assertThat(reason).isEqualTo(DropReason.EVICTED);
            assertThat(e.protectedNow()).as("%s: pinned or ACTIVE %s dropped", step, key).isFalse();
            assertThat(size).isEqualTo(e.bytes.length);
            dropsSeen++;
        }

        ObjectKey anyKey() {
            return ObjectKey.of(random.nextInt(KEYS));
        }

        PriorityClass anyPriority() {
            int r = random.nextInt(10);
            return r == 0 ? PriorityClass.ACTIVE : PriorityClass.ofOrdinal(1 + r % 3);
        }

        void randomStep(TieredStore store) {
            int op = random.nextInt(100);
            ObjectKey key = anyKey();
            if (op < 35) {
                if (removedPinned.containsKey(key)) {
                    return; // keep unpin-by-key unambiguous
                }
                int size = 1 + random.nextInt(3 * (int) PAGE);
                byte[] bytes = TestBytes.random(random, size);
                Durability d = random.nextInt(3) == 0 ? Durability.BACKED : Durability.LOSSY;
                PriorityClass p = anyPriority();
                int target = random.nextInt(5) == 0 ? 1 : 0;
                boolean had = live.containsKey(key);
                PutStatus s = store.put(key, ObjectKind.KV_BLOCK, d, p, TestBytes.segment(bytes), target);
                step += " put " + key + " " + d + " " + p + " " + size + " -> " + s;
                switch (s) {
                    case STORED -> {
                        assertThat(had).as(step).isFalse();
                        live.put(key, new Expected(bytes, d, p));
                    }
                    case ALREADY_PRESENT -> assertThat(had).as(step).isTrue();
                    case REFUSED_NO_SPACE, REFUSED_TOO_LARGE -> {
                        assertThat(live.containsKey(key)).as(step).isEqualTo(had);
                        assertThat(store.contains(key)).as(step).isEqualTo(had);
                    }
                }
            } else if (op < 60) {
                Expected e = live.get(key);
                ObjectView v = store.get(key);
                step += " get " + key + " -> " + (v == null ? "miss" : v.tierName());
                if (e == null) {
                    assertThat(v).as(step).isNull();
                    return;
                }
                assertThat(v).as(step + ": a stored object must be found").isNotNull();
                assertThat(TestBytes.toArray(v.bytes())).as(step).isEqualTo(e.bytes);
                if (views.size() < 4 && random.nextInt(3) == 0) {
                    e.views++;
                    views.add(new OpenView(key, e, v));
                } else {
                    v.close();
                }
            } else if (op < 68) {
                boolean ok = store.pin(key);
                step += " pin " + key;
                assertThat(ok).as(step).isEqualTo(live.containsKey(key));
                if (ok) {
                    live.get(key).pins++;
                }
            } else if (op < 76) {
                Expected e = live.get(key);
                if (e == null) {
                    e = removedPinned.get(key);
                }
                if (e == null || e.pins == 0) {
                    return;
                }
                step += " unpin " + key;
                assertThat(store.unpin(key)).as(step).isTrue();
                e.pins--;
                settleRemoved(key, e);
            } else if (op < 84) {
                Expected e = live.remove(key);
                step += " remove " + key;
                assertThat(store.remove(key)).as(step).isEqualTo(e != null);
                if (e != null && e.pins + e.views > 0) {
                    removedPinned.put(key, e);
                }
            } else if (op < 94) {
                PriorityClass p = anyPriority();
                step += " setPriority " + key + " " + p;
                assertThat(store.setPriority(key, p)).as(step).isEqualTo(live.containsKey(key));
                Expected e = live.get(key);
                if (e != null) {
                    e.priority = p;
                }
            } else if (!views.isEmpty()) {
                OpenView ov = views.remove(random.nextInt(views.size()));
                step += " close view of " + ov.key();
                ov.view().close();
                ov.expected().views--;
                settleRemoved(ov.key(), ov.expected());
            }
        }

        void settleRemoved(ObjectKey key, Expected e) {
            if (removedPinned.get(key) == e && e.pins + e.views == 0) {
                removedPinned.remove(key);
            }
        }

        void check(TieredStore store) {
            store.checkPlacement();
            assertThat(store.size()).as("%s: objects stored", step).isEqualTo(live.size());
            StoreStats stats = store.stats();
            assertThat(stats.objects()).isEqualTo(live.size());
            assertThat(stats.dropsReported()).isEqualTo(dropsSeen);
            Map<String, Long> reserved = new HashMap<>();
            for (Map.Entry<ObjectKey, Expected> entry : live.entrySet()) {
                ObjectKey key = entry.getKey();
                Expected e = entry.getValue();
                assertThat(store.contains(key)).as("%s: %s %s lost", step, e.durability, key).isTrue();
                List<ResidencyInfo> copies = store.residencies(key);
                assertThat(copies).as("%s: copies of %s", step, key).isNotEmpty();
                int mask = 0;
                for (ResidencyInfo r : copies) {
                    Tier tier = tiersByName.get(r.tierName());
                    byte[] actual = new byte[e.bytes.length];
                    assertThat(tier.read(r.handle(), TestBytes.segment(actual))).isTrue();
                    assertThat(actual).as("%s: bytes of %s in %s", step, key, r.tierName()).isEqualTo(e.bytes);
                    reserved.merge(r.tierName(), r.reservedBytes(), Long::sum);
                    mask |= 1 << r.chainIndex();
                }
                assertThat(store.tierMask(key)).isEqualTo(mask);
                assertThat(store.pinCount(key)).as("%s: pins of %s", step, key).isEqualTo(e.pins + e.views);
                if (e.protectedNow()) {
                    if (e.protectedMask != 0) {
                        assertThat(mask & e.protectedMask).as("%s: pinned or ACTIVE %s lost a copy", step, key)
                                .isEqualTo(e.protectedMask);
                    }
                    e.protectedMask = mask;
                } else {
                    e.protectedMask = 0;
                }
            }
            long pinned = removedPinned.size() + live.values().stream().filter(e -> e.pins + e.views > 0).count();
            assertThat(stats.pinnedObjects()).as("%s: pinned objects", step).isEqualTo(pinned);
            for (OpenView ov : views) {
                assertThat(TestBytes.toArray(ov.view().bytes())).as("%s: open view of %s", step, ov.key()).isEqualTo(ov.expected().bytes);
            }
            for (StoreTierStats m : stats.tiers()) {
                Tier tier = tiersByName.get(m.name());
                assertThat(tier.used()).as("%s: used bytes of %s", step, m.name()).isEqualTo(m.reservedBytes());
                assertThat(tier.used()).isLessThanOrEqualTo(tier.capacity());
                if (removedPinned.isEmpty()) {
                    assertThat(tier.used()).as("%s: used bytes of %s vs copies", step, m.name())
                            .isEqualTo(reserved.getOrDefault(m.name(), 0L));
                }
            }
        }

        void tearDown(TieredStore store) {
            for (OpenView ov : views) {
                ov.view().close();
                ov.expected().views--;
            }
            views.clear();
            for (Map.Entry<ObjectKey, Expected> entry : new ArrayList<>(removedPinned.entrySet())) {
                for (int i = entry.getValue().pins; i > 0; i--) {
                    assertThat(store.unpin(entry.getKey())).isTrue();
                }
            }
            removedPinned.clear();
            for (Map.Entry<ObjectKey, Expected> entry : live.entrySet()) {
                for (int i = entry.getValue().pins; i > 0; i--) {
                    store.unpin(entry.getKey());
                }
                assertThat(store.remove(entry.getKey())).isTrue();
            }
            live.clear();
            assertThat(store.size()).isZero();
        }
    }
}
