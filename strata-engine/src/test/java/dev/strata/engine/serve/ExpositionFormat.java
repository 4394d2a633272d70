package dev.strata.engine.serve;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * A strict reader of the Prometheus text exposition format (0.0.4), for tests: {@link #parse}
 * accepts a page only when every sample belongs to a family declared once, with one HELP and one
 * TYPE line before its samples, all of a family's samples are together, counters end in
 * {@code _total}, no series repeats, label values use only the format's escapes ({@code \\},
 * {@code \"}, {@code \n}), and each histogram series has cumulative buckets ending in
 * {@code le="+Inf"} equal to its {@code _count}, and a {@code _sum}. A breach throws
 * {@link AssertionError} naming the line.
 */
final class ExpositionFormat {

    /** One sample: its name, labels (in order) and value. */
    record Sample(String name, Map<String, String> labels, double value) {
    }

    /** One family: name, type, help (unescaped) and samples in page order. */
    record Family(String name, String type, String help, List<Sample> samples) {
    }

    private ExpositionFormat() {
    }

    /** The families of {@code page}, in page order; throws {@link AssertionError} on the first breach. */
    static Map<String, Family> parse(String page) {
        Map<String, Family> families = new LinkedHashMap<>();
        Map<String, String> helps = new HashMap<>();
        Map<String, String> types = new HashMap<>();
        Set<String> closed = new HashSet<>();   // families whose group has ended
        Set<String> series = new HashSet<>();
        String current = null;                   // the family whose group is open
        if (!page.isEmpty() && !page.endsWith("\n")) {
            throw new AssertionError("the page does not end with a line feed");
        }
        String[] lines = page.split("\n", -1);
        for (int n = 0; n < lines.length - 1; n++) {
            String line = lines[n];
            String where = "line " + (n + 1) + " '" + line + "': ";
            if (line.startsWith("# HELP ") || line.startsWith("# TYPE ")) {
                boolean help = line.startsWith("# HELP ");
                String rest = line.substring(7);
                int space = rest.indexOf(' ');
                String name = space < 0 ? rest : rest.substring(0, space);
                String text = space < 0 ? "" : rest.substring(space + 1);
                checkMetricName(name, where);
                if (closed.contains(name) || (!name.equals(current) && families.containsKey(name))) {
                    throw new AssertionError(where + "family " + name + " is declared a second time");
                }
                if (!name.equals(current)) {
                    if (current != null) {
                        closed.add(current);
                    }
                    current = name;
                    families.put(name, null);
                }
                Map<String, String> into = help ? helps : types;
                if (into.put(name, help ? unescapeHelp(text, where) : text) != null) {
                    throw new AssertionError(where + "a second " + (help ? "HELP" : "TYPE") + " line for " + name);
                }
                if (!help) {
                    if (!Set.of("counter", "gauge", "summary", "histogram", "untyped").contains(text)) {
                        throw new AssertionError(where + "unknown type '" + text + "'");
                    }
                    if (text.equals("counter") && !name.endsWith("_total")) {
                        throw new AssertionError(where + "counter " + name + " does not end in _total");
                    }
                }
                continue;
            }
            if (line.startsWith("#")) {
                continue; // a comment
            }
            Sample s = sample(line, where);
            if (current == null || !belongs(s.name(), current, types.get(current))) {
                throw new AssertionError(where + "sample " + s.name() + " is not in the group of a declared family (open: "
                        + current + ")");
            }
            if (helps.get(current) == null || types.get(current) == null) {
                throw new AssertionError(where + "family " + current + " needs HELP and TYPE before its samples");
            }
            if (!series.add(s.name() + new TreeMap<>(s.labels()))) {
                throw new AssertionError(where + "series written twice");
            }
            Family f = families.get(current);
            if (f == null) {
                f = new Family(current, types.get(current), helps.get(current), new ArrayList<>());
                families.put(current, f);
            }
            f.samples().add(s);
        }
        Map<String, Family> out = new LinkedHashMap<>();
        for (var e : families.entrySet()) {
            String name = e.getKey();
            if (helps.get(name) == null || types.get(name) == null) {
                throw new AssertionError("family " + name + " lacks a " + (helps.get(name) == null ? "HELP" : "TYPE") + " line");
            }
            Family f = e.getValue() != null ? e.getValue() : new Family(name, types.get(name), helps.get(name), new ArrayList<>());
            if (f.type().equals("histogram")) {
                checkHistogram(f);
            }
            out.put(name, f);
        }
        return out;
    }

    private static boolean belongs(String sample, String family, String type) {
        if (sample.equals(family)) {
            return !"histogram".equals(type);
        }
        return switch (type == null ? "untyped" : type) {
            case "histogram" -> sample.equals(family + "_bucket") || sample.equals(family + "_sum") || sample.equals(family + "_count");
            case "summary" -> sample.equals(family + "_sum") || sample.equals(family + "_count");
            default -> false;
        };
    }

    private static void checkHistogram(Family f) {
        Map<Map<String, String>, List<Sample>> buckets = new LinkedHashMap<>();
        Map<Map<String, String>, Double> counts = new HashMap<>();
        Set<Map<String, String>> sums = new HashSet<>();
        for (Sample s : f.samples()) {
            Map<String, String> key = new TreeMap<>(s.labels());
            if (s.name().endsWith("_bucket")) {
                if (key.remove("le") == null) {
                    throw new AssertionError("bucket of " + f.name() + " without an le label: " + s);
                }
                buckets.computeIfAbsent(key, k -> new ArrayList<>()).add(s);
            } else if (s.name().endsWith("_count")) {
                counts.put(key, s.value());
            } else {
                sums.add(key);
            }
        }
        for (var e : buckets.entrySet()) {
            double last = -1;
            double bound = Double.NEGATIVE_INFINITY;
            for (Sample b : e.getValue()) {
                double le = value(b.labels().get("le"), "le of " + f.name());
                if (!(le > bound) || b.value() < last) {
                    throw new AssertionError("buckets of " + f.name() + e.getKey() + " are not ascending and cumulative: " + e.getValue());
                }
                bound = le;
                last = b.value();
            }
            if (bound != Double.POSITIVE_INFINITY) {
                throw new AssertionError("buckets of " + f.name() + e.getKey() + " do not end with le=\"+Inf\"");
            }
            if (!Double.valueOf(last).equals(counts.get(e.getKey())) || !sums.contains(e.getKey())) {
                throw new AssertionError(f.name() + e.getKey() + " needs _sum and a _count equal to its +Inf bucket " + last);
            }
        }
    }

    private static Sample sample(String line, String where) {
        int i = 0;
        while (i < line.length() && line.charAt(i) != '{' && line.charAt(i) != ' ') {
            i++;
        }
        String name = line.substring(0, i);
        checkMetricName(name, where);
        Map<String, String> labels = new LinkedHashMap<>();
        if (i < line.length() && line.charAt(i) == '{') {
            i++;
            while (line.charAt(i) != '}') {
                int eq = line.indexOf("=\"", i);
                if (eq < 0) {
                    throw new AssertionError(where + "a label without =\"value\"");
                }
                String label = line.substring(i, eq);
                if (!label.matches("[a-zA-Z_][a-zA-Z0-9_]*")) {
                    throw new AssertionError(where + "bad label name '" + label + "'");
                }
                StringBuilder v = new StringBuilder();
                int j = eq + 2;
                while (true) {
                    if (j >= line.length()) {
                        throw new AssertionError(where + "label " + label + " has an unterminated value");
                    }
                    char c = line.charAt(j++);
                    if (c == '"') {
                        break;
                    }
                    if (c == '\\') {
                        char e = j < line.length() ? line.charAt(j++) : ' ';
                        switch (e) {
                            case '\\' -> v.append('\\');
                            case '"' -> v.append('"');
                            case 'n' -> v.append('\n');
                            default -> throw new AssertionError(where + "label " + label + " has the escape \\" + e
                                    + ", which the format does not define");
                        }
                    } else {
                        v.append(c);
                    }
                }
                if (labels.put(label, v.toString()) != null) {
                    throw new AssertionError(where + "label " + label + " twice");
                }
                i = j;
                if (line.charAt(i) == ',') {
                    i++;
                } else if (line.charAt(i) != '}') {
                    throw new AssertionError(where + "expected ',' or '}' after label " + label);
                }
            }
            i++;
        }
        if (i >= line.length() || line.charAt(i) != ' ') {
            throw new AssertionError(where + "no space before the value");
        }
        String[] rest = line.substring(i + 1).split(" ");
        if (rest.length > 2) {
            throw new AssertionError(where + "more than a value and a timestamp");
        }
        return new Sample(name, labels, value(rest[0], where));
    }

    private static double value(String s, String where) {
        switch (s) {
            case "NaN" -> {
                return Double.NaN;
            }
            case "+Inf" -> {
                return Double.POSITIVE_INFINITY;
            }
            case "-Inf" -> {
                return Double.NEGATIVE_INFINITY;
            }
            default -> {
                if (!s.matches("[-+]?[0-9]*\\.?[0-9]+([eE][-+]?[0-9]+)?|[-+]?[0-9]+\\.")) {
                    throw new AssertionError(where + "'" + s + "' is not a value");
                }
                return Double.parseDouble(s);
            }
        }
    }

    private static String unescapeHelp(String text, String where) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '\\') {
                char e = i + 1 < text.length() ? text.charAt(++i) : ' ';
                switch (e) {
                    case '\\' -> out.append('\\');
                    case 'n' -> out.append('\n');
                    default -> throw new AssertionError(where + "help has the escape \\" + e + ", which the format does not define");
                }
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    private static void checkMetricName(String name, String where) {
        if (!name.matches("[a-zA-Z_:][a-zA-Z0-9_:]*")) {
            throw new AssertionError(where + "bad metric name '" + name + "'");
        }
    }
}
