package dev.strata.cache.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.memory.metrics.PrometheusText;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The shared pool's health: out of the chain and back, one probe per retry interval, FAILED for good. */
class SharedPoolHealthTest {
    private static final long RETRY = 1_000_000_000L;

    @Test
    void anUnavailablePoolIsProbedOncePerIntervalAndComesBackWhenAProbeSucceeds() {
        AtomicLong now = new AtomicLong(5);
        SharedPoolHealth health = new SharedPoolHealth("kv-pool", RETRY, now::get);
        assertThat(health.ok()).isTrue();
        assertThat(health.mayProbe()).as("nothing to probe while in the chain").isFalse();

        health.unavailable("strata node died");
        assertThat(health.status()).satisfies(s -> {
            assertThat(s.state()).isEqualTo(SharedPoolHealth.State.UNAVAILABLE);
            assertThat(s.reason()).isEqualTo("strata node died");
            assertThat(s.failures()).isEqualTo(1);
        });
        assertThat(health.mayProbe()).as("not before the interval").isFalse();
        now.addAndGet(RETRY);
        assertThat(health.mayProbe()).as("one caller probes").isTrue();
        assertThat(health.mayProbe()).as("and only one").isFalse();
        health.unavailable("still down"); // the probe failed
        assertThat(health.status().failures()).as("the same outage").isEqualTo(1);
        now.addAndGet(RETRY / 2);
        assertThat(health.mayProbe()).isFalse();
        now.addAndGet(RETRY / 2);
        assertThat(health.mayProbe()).isTrue();
        health.reattached();
        assertThat(health.status()).satisfies(s -> {
            assertThat(s.ok()).isTrue();
            assertThat(s.reason()).isNull();
            assertThat(s.reattached()).isEqualTo(1);
        });

        health.unavailable("died again");
        assertThat(health.status().failures()).isEqualTo(2);
    }

    @Test
    void aFailedPoolStaysFailedAndIsNeverProbed() {
        AtomicLong now = new AtomicLong();
        SharedPoolHealth health = new SharedPoolHealth("kv-pool", RETRY, now::get);
        health.unavailable("strata node died");
        health.failed("the mapping faulted");
        now.addAndGet(10 * RETRY);
        assertThat(health.mayProbe()).isFalse();
        health.unavailable("strata node died");
        health.reattached();
        assertThat(health.status().state()).isEqualTo(SharedPoolHealth.State.FAILED);
        assertThat(health.status().reason()).isEqualTo("the mapping faulted");
        assertThat(health.status().failures()).as("one departure from the chain").isEqualTo(1);
    }

    @Test
    void writesTheFailedTierFamiliesLabelledAsTheOtherTierFamilies() {
        SharedPoolHealth health = new SharedPoolHealth("kv-pool", RETRY, System::nanoTime);
        health.failed("the mapping faulted");
        PrometheusText out = new PrometheusText();
        health.status().writeTo(out);
        assertThat(out.toString()).contains("strata_tier_failed{tier=\"kv-pool\",kind=\"pool\"} 1")
                .contains("strata_tier_failures_total{tier=\"kv-pool\",kind=\"pool\"} 1")
                .contains("strata_tier_reattached_total{tier=\"kv-pool\",kind=\"pool\"} 0");
        assertThat(SharedPoolHealth.Status.ok("p").ok()).isTrue();
        assertThatThrownBy(() -> new SharedPoolHealth("p", 0, System::nanoTime)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("retry interval 0");
    }
}
