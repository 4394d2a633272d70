package dev.strata.engine.tokenizer;

import java.math.BigDecimal;
import java.util.Iterator;
import java.util.Map;

/**
 * JSON text exactly as Python's {@code json.dumps(x, ensure_ascii=False, indent=indent)} writes
 * it, which is what Hugging Face's {@code tojson} filter produces: {@code ", "} and {@code ": "}
 * separators on one line, or with {@code indent} one item per line and {@code ","} at line ends;
 * non-ASCII characters kept, control characters escaped; keys in map order. Stateless; any thread.
 */
final class PyJson {
    private PyJson() {
    }

    /** {@code x} as JSON; {@code indent} null for one line. */
    static String dumps(Object x, Integer indent) {
        StringBuilder s = new StringBuilder();
        write(s, x, indent, 0);
        return s.toString();
    }

    private static void write(StringBuilder s, Object x, Integer indent, int depth) {
        if (x == null) {
            s.append("null");
        } else if (x instanceof String str) {
            quote(s, str);
        } else if (x instanceof Boolean b) {
            s.append(b ? "true" : "false");
        } else if (x instanceof Double || x instanceof Float) {
            s.append(pyFloat(((Number) x).doubleValue()));
        } else if (x instanceof BigDecimal d) {
            s.append(pyFloat(d.doubleValue()));
        } else if (x instanceof Number n) {
            s.append(n.toString());
        } else if (x instanceof Map<?, ?> map) {
            if (map.isEmpty()) {
                s.append("{}");
                return;
            }
            s.append('{');
            Iterator<? extends Map.Entry<?, ?>> it = map.entrySet().iterator();
            while (it.hasNext()) {
                Map.Entry<?, ?> e = it.next();
                newline(s, indent, depth + 1);
                quote(s, String.valueOf(e.getKey()));
                s.append(": ");
                write(s, e.getValue(), indent, depth + 1);
                if (it.hasNext()) {
                    s.append(indent == null ? ", " : ",");
                }
            }
            newline(s, indent, depth);
            s.append('}');
        } else if (x instanceof Iterable<?> list) {
            Iterator<?> it = list.iterator();
            if (!it.hasNext()) {
                s.append("[]");
                return;
            }
            s.append('[');
            while (it.hasNext()) {
                newline(s, indent, depth + 1);
                write(s, it.next(), indent, depth + 1);
                if (it.hasNext()) {
                    s.append(indent == null ? ", " : ",");
                }
            }
            newline(s, indent, depth);
            s.append(']');
        } else {
            quote(s, x.toString());
        }
    }

    private static void newline(StringBuilder s, Integer indent, int depth) {
        if (indent != null) {
            s.append('\n').append(" ".repeat(indent * depth));
        }
    }

    private static void quote(StringBuilder s, String str) {
        s.append('"');
        for (int i = 0; i < str.length(); i++) {
            char c = str.charAt(i);
            switch (c) {
                case '"' -> s.append("\\\"");
                case '\\' -> s.append("\\\\");
                case '\n' -> s.append("\\n");
                case '\r' -> s.append("\\r");
                case '\t' -> s.append("\\t");
                case '\b' -> s.append("\\b");
                case '\f' -> s.append("\\f");
                default -> {
                    if (c < 0x20) {
                        s.append(String.format("\\u%04x", (int) c));
                    } else {
                        s.append(c);
                    }
                }
            }
        }
        s.append('"');
    }

    /** Python's {@code repr(float)}: shortest digits, {@code 1.0} not {@code 1}, {@code 1e-05} style exponents. */
    static String pyFloat(double d) {
        if (Double.isNaN(d)) {
            return "NaN";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "Infinity" : "-Infinity";
        }
        if (d == 0) {
            return (1 / d < 0) ? "-0.0" : "0.0";
        }
        BigDecimal exact = new BigDecimal(Double.toString(d)).stripTrailingZeros();
        double abs = Math.abs(d);
        if (abs >= 1e-4 && abs < 1e16) {
            String plain = exact.toPlainString();
            return plain.contains(".") ? plain : plain + ".0";
        }
        String digits = exact.unscaledValue().abs().toString();
        int exponent = digits.length() - 1 - exact.scale();
        String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
        return (d < 0 ? "-" : "") + mantissa + "e" + (exponent < 0 ? "-" : "+") + String.format("%02d", Math.abs(exponent));
    }
}
