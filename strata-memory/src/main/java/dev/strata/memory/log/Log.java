package dev.strata.memory.log;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The one log format of Strata: every diagnostic, progress and warning line any Strata process
 * writes goes to standard error as
 *
 * <pre>
 * strata COMPONENT: message
 * strata COMPONENT: warning: message
 * strata COMPONENT: error: message
 * </pre>
 *
 * followed, when a throwable is given, by its stack trace. Standard output is left to what a
 * command reports (a table, JSON, a ready line), so a report stays parseable however much is
 * logged beside it.
 *
 * <p>Design note: code that logs through {@link System.Logger} (the JDK's default backend is
 * {@code java.util.logging}) reaches the same format once a process calls
 * {@link #useForJavaLogging()}, which replaces the root logger's handlers with one that writes
 * through {@link #write}; the component is then the logging class's simple name, hyphenated
 * ({@code DiskTier} becomes {@code disk-tier}). Records below {@code INFO} are dropped.
 * Handlers added to a particular logger (a test capturing a class's records) keep working.
 *
 * <p>Threads: every method may be called from any thread; each record is written as one
 * {@code print} under a lock, so the lines of two threads never interleave. {@link System#err} is
 * looked up at each write, so a caller that swaps it (a test) captures the records.
 */
public final class Log {
    private static final Object LOCK = new Object();

    private Log() {
    }

    /** How serious a record is; only WARNING and ERROR are named in the line. */
    public enum Severity {
        INFO(""), WARNING("warning: "), ERROR("error: ");

        private final String tag;

        Severity(String tag) {
            this.tag = tag;
        }
    }

    /** Logs progress or a fact worth a line. */
    public static void info(String component, String message) {
        write(Severity.INFO, component, message, null);
    }

    /** Logs a problem the process survives. */
    public static void warn(String component, String message) {
        write(Severity.WARNING, component, message, null);
    }

    /** Logs a failure, with its cause's stack trace when {@code cause} is not null. */
    public static void error(String component, String message, Throwable cause) {
        write(Severity.ERROR, component, message, cause);
    }

    /**
     * The one line that ends a command which fails on bad input: {@code strata: message}, the
     * format above without a component.
     */
    public static String failure(String message) {
        return "strata: " + message;
    }

    /** One record in the format above, without the line separator; {@code component} null or blank gives {@code strata: }. */
    public static String format(Severity severity, String component, String message) {
        String prefix = component == null || component.isBlank() ? "strata: " : "strata " + component + ": ";
        return prefix + severity.tag + message;
    }

    /** Writes one record (and {@code cause}'s stack trace when not null) to standard error. */
    public static void write(Severity severity, String component, String message, Throwable cause) {
        PrintStream err = System.err;
        synchronized (LOCK) {
            err.println(format(severity, component, message));
            if (cause != null) {
                cause.printStackTrace(err);
            }
            err.flush();
        }
    }

    /**
     * A stream for code that reports progress to a {@link PrintStream}: every complete line written
     * to it becomes one INFO record of {@code component} (leading blanks dropped). Closing it
     * flushes a last unterminated line.
     */
    public static PrintStream stream(String component) {
        OutputStream lines = new OutputStream() {
            private final ByteArrayOutputStream line = new ByteArrayOutputStream(); // guarded by this

            @Override
            public synchronized void write(int b) {
                if (b == '\n') {
                    emit();
                } else if (b != '\r') {
                    line.write(b);
                }
            }

            @Override
            public synchronized void close() {
                if (line.size() > 0) {
                    emit();
                }
            }

            private void emit() {
                String text = line.toString(StandardCharsets.UTF_8).strip();
                line.reset();
                if (!text.isEmpty()) {
                    info(component, text);
                }
            }
        };
        return new PrintStream(lines, true, StandardCharsets.UTF_8);
    }

    /**
     * Routes {@code java.util.logging}, and so {@link System.Logger}, through this format: the
     * root logger's handlers are replaced by one that writes INFO and above with {@link #write}.
     * Idempotent; called once by a process's entry point.
     */
    public static void useForJavaLogging() {
        Logger root = LogManager.getLogManager().getLogger("");
        for (Handler h : root.getHandlers()) {
            if (h instanceof JavaLoggingHandler) {
                return;
            }
        }
        for (Handler h : root.getHandlers()) {
            root.removeHandler(h);
        }
        root.addHandler(new JavaLoggingHandler());
    }

    /** The component a logger name stands for: its last segment, hyphenated ({@code dev.strata.memory.disk.DiskTier} is {@code disk-tier}). */
    static String component(String loggerName) {
        if (loggerName == null || loggerName.isEmpty()) {
            return "";
        }
        String simple = loggerName.substring(loggerName.lastIndexOf('.') + 1);
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < simple.length(); i++) {
            char c = simple.charAt(i);
            if (Character.isUpperCase(c) && i > 0 && !Character.isUpperCase(simple.charAt(i - 1))) {
                b.append('-');
            }
            b.append(Character.toLowerCase(c));
        }
        return b.toString().toLowerCase(Locale.ROOT);
    }

    /** The bridge from {@code java.util.logging}: INFO and above, formatted by {@link #write}. */
    private static final class JavaLoggingHandler extends Handler {
        JavaLoggingHandler() {
            setLevel(Level.INFO);
        }

        @Override
        public void publish(LogRecord r) {
            if (r == null || !isLoggable(r)) {
                return;
            }
            int level = r.getLevel().intValue();
            Severity s = level >= Level.SEVERE.intValue() ? Severity.ERROR
                    : level >= Level.WARNING.intValue() ? Severity.WARNING : Severity.INFO;
            String message = r.getMessage();
            if (message != null && r.getParameters() != null && r.getParameters().length > 0) {
                message = new java.util.logging.SimpleFormatter().formatMessage(r);
            }
            write(s, component(r.getLoggerName()), String.valueOf(message), r.getThrown());
        }

        @Override
        public void flush() {
            System.err.flush();
        }

        @Override
        public void close() {
        }
    }
}
