package dev.strata.cache.peer;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.TreeSet;

/**
 * The lending rule every Strata lender follows: how much of its budget a lender may lend given its
 * own demand, and which lent regions it asks back when that demand rises. The in-process
 * {@link LocalLender} and the cross-process peer agent both decide with it; they differ only in how
 * they carry the decision out.
 *
 * <p>Design note.
 * <ul>
 *   <li><b>Reserve and offer.</b> The lender keeps its demand for itself, rounded up to whole
 *       granules (the agent's region size; 1 byte for a lender that carves any size) and capped at
 *       the budget: {@link #reservedBytes}. The rest is its offer ({@link #offerBytes}); a new loan
 *       is allowed only while everything the borrowers still hold (lent, being revoked, not yet
 *       released) plus the request fits the offer ({@link #mayLend}), so what is lent never
 *       exceeds the budget.</li>
 *   <li><b>Shortfall.</b> What the reserve lacks after counting every byte the lender has or has
 *       coming back (free, held, already asked back): {@link #shortfallBytes}.</li>
 *   <li><b>Which regions come back.</b> {@link #revocations} repeats one choice until the
 *       shortfall is covered: the smallest lent region that covers what is still short, else the
 *       largest. This asks back as few regions as largest-first does (it takes the largest
 *       exactly while no single region would do, so after {@code k} picks it has covered the
 *       shortfall if and only if the {@code k} largest regions would have), and never more bytes
 *       (the first {@code k - 1} picks are the same; its last is the smallest region that closes
 *       the gap, largest-first's the largest): the bytes asked back beyond the shortfall are fewer
 *       than the smallest region chosen, so no chosen region could be left out. Every revocation interrupts a borrower and throws away whatever it kept there,
 *       so both the count and the excess are work lost.</li>
 *   <li><b>Ties.</b> Among regions of one size the youngest lease goes first (the one least likely
 *       to have earned its keep yet), then the higher id. Whether an access is under way is not
 *       used: it lasts microseconds, a revocation a round trip, so it would be a coin toss, and the
 *       drain already waits for it.</li>
 * </ul>
 *
 * <p>Units: bytes throughout (a caller counting regions multiplies by the region size). Pure
 * logic: no I/O, no clock, no state beyond the two sizes it was made with; immutable, so any
 * thread may call any method.
 */
public final class LendingRule {

    /**
     * One region lent, as the rule sees it.
     *
     * @param id     the caller's name for the region (an offset, a head region); unique among the loans of one call
     * @param bytes  bytes it holds of the budget, {@code > 0}
     * @param lentAt when it was lent, on any clock that grows (an epoch, milliseconds); larger is younger
     */
    public record Loan(long id, long bytes, long lentAt) {
        public Loan {
            if (bytes <= 0) {
                throw new IllegalArgumentException("a lent region holds a positive number of bytes, got " + bytes
                        + " (region " + id + ")");
            }
        }
    }

    /** Ascending size; within a size the least preferred first, so the last of a size is the one to take. */
    private static final Comparator<Loan> ORDER = Comparator.comparingLong(Loan::bytes)
            .thenComparingLong(Loan::lentAt).thenComparingLong(Loan::id);

    private final long budgetBytes;  // bytes the lender owns, the most it ever lends
    private final long granuleBytes; // bytes; the reserve is a whole number of these (capped at the budget)

    /**
     * @param budgetBytes  bytes the lender owns, {@code > 0}
     * @param granuleBytes the unit the lender reserves its demand in, {@code 1 .. budgetBytes}
     */
    public LendingRule(long budgetBytes, long granuleBytes) {
        if (budgetBytes <= 0 || granuleBytes <= 0 || granuleBytes > budgetBytes) {
            throw new IllegalArgumentException("lending rule: budget " + budgetBytes + " bytes must be > 0 and the granule "
                    + granuleBytes + " bytes between 1 and the budget");
        }
        this.budgetBytes = budgetBytes;
        this.granuleBytes = granuleBytes;
    }

    public long budgetBytes() {
        return budgetBytes;
    }

    public long granuleBytes() {
        return granuleBytes;
    }

    /** Bytes the lender keeps for itself: {@code demandBytes} rounded up to whole granules, at most the budget. */
    public long reservedBytes(long demandBytes) {
        if (demandBytes < 0) {
            throw new IllegalArgumentException("a lender's demand is >= 0 bytes, got " + demandBytes);
        }
        if (demandBytes >= budgetBytes) {
            return budgetBytes;
        }
        long granules = (demandBytes + granuleBytes - 1) / granuleBytes;
        return Math.min(budgetBytes, granules * granuleBytes);
    }

    /** Bytes the lender offers to borrowers: the budget less its reserve. */
    public long offerBytes(long demandBytes) {
        return budgetBytes - reservedBytes(demandBytes);
    }

    /**
     * Bytes a new loan may still take: the offer less what borrowers hold.
     *
     * @param outstandingBytes bytes borrowers hold in any phase (lent, being revoked, not yet released), {@code >= 0}
     */
    public long headroomBytes(long demandBytes, long outstandingBytes) {
        if (outstandingBytes < 0) {
            throw new IllegalArgumentException("bytes held by borrowers are >= 0, got " + outstandingBytes);
        }
        return Math.max(0, offerBytes(demandBytes) - outstandingBytes);
    }

    /** Whether a loan of {@code requestBytes} (held size, {@code > 0}) fits the headroom. */
    public boolean mayLend(long demandBytes, long outstandingBytes, long requestBytes) {
        if (requestBytes <= 0) {
            throw new IllegalArgumentException("a loan is of a positive number of bytes, got " + requestBytes);
        }
        return requestBytes <= headroomBytes(demandBytes, outstandingBytes);
    }

    /**
     * Bytes that must come back from borrowers for the reserve to be met.
     *
     * @param keptBytes bytes of the budget not out on loan: free, held by the lender, or already asked back
     *                  ({@code 0 .. budget})
     */
    public long shortfallBytes(long demandBytes, long keptBytes) {
        if (keptBytes < 0 || keptBytes > budgetBytes) {
            throw new IllegalArgumentException("bytes kept by the lender are between 0 and the budget " + budgetBytes
                    + ", got " + keptBytes);
        }
        return Math.max(0, reservedBytes(demandBytes) - keptBytes);
    }

    /**
     * The regions to ask back, in the order chosen, for {@code shortfallBytes}: the smallest region
     * covering what is still short, else the largest, until it is covered or nothing is left (then
     * every region is chosen). Empty for a shortfall of 0.
     *
     * @param lent the regions lent and not yet asked back; ids unique
     */
    public List<Loan> revocations(Collection<Loan> lent, long shortfallBytes) {
        if (shortfallBytes < 0) {
            throw new IllegalArgumentException("a shortfall is >= 0 bytes, got " + shortfallBytes);
        }
        List<Loan> chosen = new ArrayList<>();
        if (shortfallBytes == 0 || lent.isEmpty()) {
            return chosen;
        }
        TreeSet<Loan> left = new TreeSet<>(ORDER);
        HashSet<Long> ids = new HashSet<>();
        for (Loan l : lent) {
            if (!ids.add(l.id())) {
                throw new IllegalArgumentException("two lent regions share id " + l.id() + "; ids must be unique");
            }
            left.add(l);
        }
        long shortBy = shortfallBytes;
        while (shortBy > 0 && !left.isEmpty()) {
            Loan pick;
            if (left.last().bytes() < shortBy) {
                pick = left.last(); // nothing covers it alone: the largest (the youngest of that size)
            } else {
                long size = left.ceiling(new Loan(Long.MIN_VALUE, shortBy, Long.MIN_VALUE)).bytes();
                pick = left.floor(new Loan(Long.MAX_VALUE, size, Long.MAX_VALUE)); // the youngest of the smallest covering size
            }
            left.remove(pick);
            chosen.add(pick);
            shortBy -= pick.bytes();
        }
        return chosen;
    }

    @Override
    public String toString() {
        return "LendingRule[budget " + budgetBytes + " bytes, granule " + granuleBytes + " bytes]";
    }
}
