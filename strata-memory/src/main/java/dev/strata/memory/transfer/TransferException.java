package dev.strata.memory.transfer;

/**
 * A transfer failed because a tier threw; the message names the link ({@code source->destination}
 * tier names), the handles and the length, and the cause is the tier's exception.
 */
public final class TransferException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String link;

    public TransferException(String link, String what, Throwable cause) {
        super("transfer on link '" + link + "' failed: " + what + ": " + cause, cause);
        this.link = link;
    }

    /** The link's name, {@code source->destination}. */
    public String link() {
        return link;
    }
}
