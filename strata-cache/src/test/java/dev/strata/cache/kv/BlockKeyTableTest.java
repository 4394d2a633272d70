package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import dev.strata.testing.Property;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The open-addressing key table agrees with a HashMap under random inserts and removals. */
class BlockKeyTableTest {

    @Test
    void agreesWithAHashMapUnderRandomOperations() {
        Property.forAll("block-key-table", 40, random -> {
            int max = 1 + random.nextInt(40);
            BlockKeyTable table = new BlockKeyTable(max);
            HashMap<ObjectKey, DeviceBlock> model = new HashMap<>();
            List<ObjectKey> universe = new ArrayList<>();
            for (int i = 0; i < 2 * max + 3; i++) {
                universe.add(new ObjectKey(random.nextLong(), random.nextLong()));
            }
            for (int step = 0; step < 400; step++) {
                ObjectKey k = universe.get(random.nextInt(universe.size()));
                if (random.nextInt(3) > 0 && model.size() < max) {
                    DeviceBlock b = new DeviceBlock(step);
                    DeviceBlock before = table.putIfAbsent(k, b);
                    assertThat(before).isSameAs(model.get(k));
                    model.putIfAbsent(k, b);
                } else {
                    DeviceBlock current = model.get(k);
                    DeviceBlock other = new DeviceBlock(-1);
                    assertThat(table.remove(k, other)).as("a different block is not removed").isFalse();
                    assertThat(table.remove(k, current == null ? other : current)).isEqualTo(current != null);
                    model.remove(k);
                }
                assertThat(table.size()).isEqualTo(model.size());
                for (ObjectKey u : universe) {
                    assertThat(table.get(u)).as("lookup of %s at step %d", u, step).isSameAs(model.get(u));
                }
            }
        });
    }

    @Test
    void refusesMoreKeysThanItWasSizedFor() {
        BlockKeyTable table = new BlockKeyTable(2);
        table.putIfAbsent(ObjectKey.of(1), new DeviceBlock(0));
        table.putIfAbsent(ObjectKey.of(2), new DeviceBlock(1));
        assertThatThrownBy(() -> table.putIfAbsent(ObjectKey.of(3), new DeviceBlock(2)))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("holds 2 keys");
    }
}
