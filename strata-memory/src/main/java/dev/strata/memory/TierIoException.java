package dev.strata.memory;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * An I/O failure in a tier (disk full, device error, file gone), with the tier and the operation
 * named. The tier stays usable for other objects where the cause allows.
 */
public final class TierIoException extends UncheckedIOException {
    private static final long serialVersionUID = 1L;

    private final String tier;

    public TierIoException(String tier, String operation, IOException cause) {
        super("tier '" + tier + "': " + operation + " failed: " + cause.getMessage(), cause);
        this.tier = tier;
    }

    public String tier() {
        return tier;
    }
}
