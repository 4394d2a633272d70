package dev.strata.memory.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class PrometheusTextTest {

    @Test
    void writesFamiliesOnceAndEscapesLabels() {
        PrometheusText t = new PrometheusText()
                .family("strata_tier_used_bytes", PrometheusText.Type.GAUGE, "Bytes allocated")
                .sample("strata_tier_used_bytes", 4096, "tier", "host")
                .family("strata_tier_used_bytes", PrometheusText.Type.GAUGE, "Bytes allocated")
                .sample("strata_tier_used_bytes", 1.5, "tier", "a\"b\\c\nd")
                .sample("strata_tier_used_bytes", Double.NaN);
        assertThat(t.toString()).isEqualTo("""
                # HELP strata_tier_used_bytes Bytes allocated
                # TYPE strata_tier_used_bytes gauge
                strata_tier_used_bytes{tier="host"} 4096
                strata_tier_used_bytes{tier="a\\"b\\\\c\\nd"} 1.5
                strata_tier_used_bytes NaN
                """);
    }

    @Test
    void rejectsBadNames() {
        assertThatThrownBy(() -> new PrometheusText().sample("1bad", 1)).hasMessageContaining("'1bad'");
        assertThatThrownBy(() -> new PrometheusText().sample("ok", 1, "bad-label", "x")).hasMessageContaining("'bad-label'");
        assertThatThrownBy(() -> new PrometheusText().sample("ok", 1, "odd")).hasMessageContaining("pairs");
    }
}
