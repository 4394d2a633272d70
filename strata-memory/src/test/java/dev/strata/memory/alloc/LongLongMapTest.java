package dev.strata.memory.alloc;

import dev.strata.testing.Property;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class LongLongMapTest {

    @Test
    void behavesLikeAHashMapUnderRandomOperations() {
        Property.forAll("long-long map", 30, random -> {
            LongLongMap map = new LongLongMap();
            Map<Long, Long> reference = new HashMap<>();
            List<Long> keys = new ArrayList<>();
            long keySpace = random.nextLong(8, 5000);
            for (int step = 0; step < 3000; step++) {
                int op = random.nextInt(10);
                long key = random.nextLong(0, keySpace) * (random.nextBoolean() ? 4096 : 1);
                if (op < 5) {
                    long value = random.nextLong(0, Long.MAX_VALUE);
                    map.put(key, value);
                    if (reference.put(key, value) == null) {
                        keys.add(key);
                    }
                } else if (op < 8 && !keys.isEmpty()) {
                    long k = keys.remove(random.nextInt(keys.size()));
                    assertThat(map.remove(k)).isEqualTo(reference.remove(k));
                } else {
                    assertThat(map.get(key)).isEqualTo(reference.getOrDefault(key, LongLongMap.MISSING));
                }
                assertThat(map.size()).isEqualTo(reference.size());
            }
            for (Map.Entry<Long, Long> e : reference.entrySet()) {
                assertThat(map.get(e.getKey())).isEqualTo(e.getValue());
            }
            Map<Long, Long> listed = new HashMap<>();
            map.forEach(listed::put);
            assertThat(listed).isEqualTo(reference);
            assertThat(map.remove(Long.MAX_VALUE)).isEqualTo(LongLongMap.MISSING);
        });
    }
}
