package dev.strata.cache.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.peer.LendingRule.Loan;
import java.util.List;
import org.junit.jupiter.api.Test;

class LendingRuleTest {

    @Test
    void theReserveIsTheDemandInWholeGranulesAndTheOfferTheRestOfTheBudget() {
        LendingRule rule = new LendingRule(8 * 4_096, 4_096);
        assertThat(rule.reservedBytes(0)).isZero();
        assertThat(rule.reservedBytes(1)).isEqualTo(4_096);
        assertThat(rule.reservedBytes(4_096)).isEqualTo(4_096);
        assertThat(rule.reservedBytes(4_097)).isEqualTo(8_192);
        assertThat(rule.reservedBytes(Long.MAX_VALUE)).as("capped at the budget").isEqualTo(8 * 4_096);
        assertThat(rule.offerBytes(4_097)).isEqualTo(6 * 4_096);
        assertThat(rule.headroomBytes(4_097, 5 * 4_096)).isEqualTo(4_096);
        assertThat(rule.headroomBytes(4_097, 7 * 4_096)).as("more held than offered: none").isZero();
        assertThat(rule.mayLend(4_097, 5 * 4_096, 4_096)).isTrue();
        assertThat(rule.mayLend(4_097, 5 * 4_096, 4_097)).isFalse();
        assertThat(rule.shortfallBytes(3 * 4_096, 4_096)).isEqualTo(2 * 4_096);
        assertThat(rule.shortfallBytes(3 * 4_096, 5 * 4_096)).isZero();
    }

    @Test
    void aGranuleThatDoesNotDivideTheBudgetStillCapsTheReserveAtTheBudget() {
        LendingRule rule = new LendingRule(10_000, 4_096);
        assertThat(rule.reservedBytes(9_000)).isEqualTo(10_000);
        assertThat(rule.offerBytes(9_000)).isZero();
    }

    @Test
    void theSmallestRegionCoveringTheShortfallGoesRatherThanTheLargest() {
        LendingRule rule = new LendingRule(1 << 20, 1);
        List<Loan> lent = List.of(new Loan(1, 512, 1), new Loan(2, 3_008, 2), new Loan(3, 1_536, 3));
        assertThat(rule.revocations(lent, 1_056)).extracting(Loan::id).containsExactly(3L);
        assertThat(rule.revocations(lent, 1_537)).extracting(Loan::id).containsExactly(2L);
        assertThat(rule.revocations(lent, 3_520)).as("none covers alone: the largest, then the smallest covering the rest")
                .extracting(Loan::id).containsExactly(2L, 1L);
        assertThat(rule.revocations(lent, 4_544)).extracting(Loan::id).containsExactly(2L, 3L);
        assertThat(rule.revocations(lent, 10_000)).as("more than is lent: everything").extracting(Loan::id)
                .containsExactlyInAnyOrder(1L, 2L, 3L);
        assertThat(rule.revocations(lent, 0)).isEmpty();
        assertThat(rule.revocations(List.of(), 100)).isEmpty();
    }

    @Test
    void amongRegionsOfOneSizeTheYoungestLeaseGoesThenTheHigherId() {
        LendingRule rule = new LendingRule(1 << 20, 1);
        List<Loan> lent = List.of(new Loan(10, 2_048, 5), new Loan(11, 2_048, 9), new Loan(12, 2_048, 7),
                new Loan(13, 4_096, 1), new Loan(14, 4_096, 1));
        assertThat(rule.revocations(lent, 1_000)).extracting(Loan::id).containsExactly(11L);
        assertThat(rule.revocations(lent, 3_000)).extracting(Loan::id).containsExactly(14L);
        assertThat(rule.revocations(lent, 5_000)).extracting(Loan::id).containsExactly(14L, 11L);
    }

    @Test
    void badInputIsRefusedNamingTheValue() {
        assertThatThrownBy(() -> new LendingRule(0, 1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("budget 0");
        assertThatThrownBy(() -> new LendingRule(100, 200)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("granule 200");
        LendingRule rule = new LendingRule(1_000, 10);
        assertThatThrownBy(() -> rule.reservedBytes(-3)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-3");
        assertThatThrownBy(() -> rule.headroomBytes(0, -4)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-4");
        assertThatThrownBy(() -> rule.mayLend(0, 0, 0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 0");
        assertThatThrownBy(() -> rule.shortfallBytes(0, 1_001)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1001");
        assertThatThrownBy(() -> rule.revocations(List.of(), -6)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-6");
        assertThatThrownBy(() -> rule.revocations(List.of(new Loan(4, 10, 1), new Loan(4, 20, 2)), 5))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("id 4");
        assertThatThrownBy(() -> new Loan(8, 0, 1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("region 8");
    }
}
