package dev.strata.cache.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.peer.LendingRule.Loan;
import dev.strata.testing.Property;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A lender modelled on the rule alone, driven by random borrows, demand swings and
 * acknowledgements. After every decision: the revocations chosen cover the shortfall (or take
 * everything lent when that is less), come from the regions lent, are as few as any choice could
 * be, overshoot the shortfall by less than the smallest of them (so none could be left out), and
 * no region left lent could have closed the last gap with fewer bytes than the last one chosen;
 * the reserve meets the demand within one granule; and what borrowers hold never passes the offer
 * at a loan, nor the budget ever.
 */
class LendingRulePropertyTest {

    @Test
    void revocationsCoverTheShortfallWithFewRegionsAndTheBudgetIsNeverExceeded() {
        Property.forAll("lending rule", 200, this::trial);
    }

    private void trial(SplittableRandom random) {
        long granule = switch (random.nextInt(4)) {
            case 0 -> 1;
            case 1 -> 64;
            case 2 -> 4_096;
            default -> 2L << 20;
        };
        long budget = granule * random.nextLong(1, 65) + (granule == 1 ? random.nextLong(0, 1 << 16) : 0);
        LendingRule rule = new LendingRule(budget, granule);
        List<Loan> lent = new ArrayList<>();     // lent and not asked back
        List<Loan> revoking = new ArrayList<>(); // asked back, not yet acknowledged
        long demand = 0;
        long clock = 0;
        long nextId = 0;
        int revocations = 0;
        for (int step = 0; step < 300; step++) {
            int action = random.nextInt(10);
            if (action < 5) {
                long size = granule * random.nextLong(1, 9) + (granule == 1 ? random.nextLong(0, 4_096) : 0);
                long held = sum(lent) + sum(revoking);
                if (rule.mayLend(demand, held, size)) {
                    lent.add(new Loan(nextId++, size, clock++));
                } else {
                    assertThat(held + size).as("a refused loan would pass the offer").isGreaterThan(rule.offerBytes(demand));
                }
            } else if (action < 8) {
                demand = random.nextLong(0, budget + budget / 4 + 1);
                long kept = budget - sum(lent);
                long shortfall = rule.shortfallBytes(demand, kept);
                List<Loan> chosen = rule.revocations(lent, shortfall);
                checkChoice(lent, shortfall, chosen);
                revocations += chosen.size();
                lent.removeAll(chosen);
                revoking.addAll(chosen);
                assertThat(sum(lent)).as("what stays lent fits the offer once the chosen regions come back")
                        .isLessThanOrEqualTo(rule.offerBytes(demand));
            } else if (!revoking.isEmpty()) {
                revoking.remove(random.nextInt(revoking.size())); // acknowledged: the bytes are the lender's again
            }
            long reserved = rule.reservedBytes(demand);
            assertThat(reserved).isBetween(Math.min(demand, budget), budget);
            assertThat(reserved - Math.min(demand, budget)).as("reserve rounds up by less than a granule").isLessThan(granule);
            assertThat(rule.offerBytes(demand) + reserved).isEqualTo(budget);
            assertThat(sum(lent) + sum(revoking)).as("borrowers never hold more than the budget").isLessThanOrEqualTo(budget);
        }
        if (budget / granule >= 4) {
            assertThat(revocations).as("the trial revoked something").isPositive();
        }
    }

    private static void checkChoice(List<Loan> lent, long shortfall, List<Loan> chosen) {
        assertThat(lent).containsAll(chosen);
        Set<Long> ids = new HashSet<>();
        for (Loan l : chosen) {
            assertThat(ids.add(l.id())).as("region %d chosen twice", l.id()).isTrue();
        }
        long total = sum(chosen);
        if (shortfall == 0) {
            assertThat(chosen).isEmpty();
            return;
        }
        if (sum(lent) < shortfall) {
            assertThat(chosen).as("less lent than the shortfall: everything").hasSameSizeAs(lent);
            return;
        }
        assertThat(total).as("the chosen regions cover the shortfall").isGreaterThanOrEqualTo(shortfall);
        long smallest = chosen.stream().mapToLong(Loan::bytes).min().orElseThrow();
        assertThat(total - shortfall).as("overshoot is less than the smallest region chosen").isLessThan(smallest);
        List<Loan> bySize = new ArrayList<>(lent);
        bySize.sort(Comparator.comparingLong(Loan::bytes).reversed());
        int fewest = 0;
        for (long covered = 0; covered < shortfall; fewest++) {
            covered += bySize.get(fewest).bytes();
        }
        assertThat(chosen).as("as few regions as the largest would take").hasSize(fewest);
        Loan last = chosen.getLast();
        long gap = shortfall - (total - last.bytes()); // what the last region had to close
        for (Loan l : lent) {
            if (!chosen.contains(l)) {
                assertThat(l.bytes() >= gap && l.bytes() < last.bytes())
                        .as("region %s left lent would have closed the gap of %d bytes with less than %s", l, gap, last)
                        .isFalse();
            }
        }
    }

    private static long sum(List<Loan> loans) {
        long s = 0;
        for (Loan l : loans) {
            s += l.bytes();
        }
        return s;
    }
}
