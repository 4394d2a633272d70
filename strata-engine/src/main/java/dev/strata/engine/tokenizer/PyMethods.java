package dev.strata.engine.tokenizer;

import java.beans.FeatureDescriptor;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * The Python methods chat templates call on strings and dicts, for Jinjava (which otherwise only
 * sees Java methods): on strings {@code strip}, {@code lstrip}, {@code rstrip} (whitespace or the
 * given characters), {@code split} (on whitespace or a literal separator, with an optional
 * maxsplit), {@code startswith}, {@code endswith}, {@code upper}, {@code lower}, {@code title},
 * {@code capitalize}, {@code replace}; on dicts {@code get(key, default)}. Anything else is left to
 * the next resolver. Stateless; any thread.
 */
final class PyMethods extends ELResolver {
    @Override
    public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
        if (method == null) {
            return null;
        }
        String name = method.toString();
        Object[] args = params == null ? new Object[0] : params;
        if (base instanceof String s) {
            Object r = string(s, name, args);
            if (r != NOT_HANDLED) {
                context.setPropertyResolved(true);
                return r;
            }
        } else if (base instanceof Map<?, ?> map && name.equals("get") && args.length == 2) {
            context.setPropertyResolved(true);
            return map.containsKey(args[0]) ? map.get(args[0]) : args[1];
        }
        return null;
    }

    private static final Object NOT_HANDLED = new Object();

    private static Object string(String s, String name, Object[] args) {
        return switch (name) {
            case "strip" -> args.length == 0 || args[0] == null ? s.strip() : rstrip(lstrip(s, str(args[0])), str(args[0]));
            case "lstrip" -> args.length == 0 || args[0] == null ? s.stripLeading() : lstrip(s, str(args[0]));
            case "rstrip" -> args.length == 0 || args[0] == null ? s.stripTrailing() : rstrip(s, str(args[0]));
            case "split" -> split(s, args.length > 0 ? args[0] : null, args.length > 1 ? ((Number) args[1]).intValue() : -1);
            case "startswith" -> args.length == 1 ? anyMatch(args[0], s::startsWith) : NOT_HANDLED;
            case "endswith" -> args.length == 1 ? anyMatch(args[0], s::endsWith) : NOT_HANDLED;
            case "upper" -> args.length == 0 ? s.toUpperCase(java.util.Locale.ROOT) : NOT_HANDLED;
            case "lower" -> args.length == 0 ? s.toLowerCase(java.util.Locale.ROOT) : NOT_HANDLED;
            case "title" -> args.length == 0 ? title(s) : NOT_HANDLED;
            case "capitalize" -> args.length == 0
                    ? (s.isEmpty() ? s : s.substring(0, 1).toUpperCase(java.util.Locale.ROOT) + s.substring(1).toLowerCase(java.util.Locale.ROOT))
                    : NOT_HANDLED;
            case "replace" -> args.length == 2 ? s.replace(str(args[0]), str(args[1])) : NOT_HANDLED;
            default -> NOT_HANDLED;
        };
    }

    private static String str(Object o) {
        return String.valueOf(o);
    }

    private static Object anyMatch(Object arg, java.util.function.Predicate<String> test) {
        if (arg instanceof Collection<?> options) {
            for (Object o : options) {
                if (test.test(str(o))) {
                    return true;
                }
            }
            return false;
        }
        return test.test(str(arg));
    }

    private static String lstrip(String s, String chars) {
        int i = 0;
        while (i < s.length() && chars.indexOf(s.charAt(i)) >= 0) {
            i++;
        }
        return s.substring(i);
    }

    private static String rstrip(String s, String chars) {
        int i = s.length();
        while (i > 0 && chars.indexOf(s.charAt(i - 1)) >= 0) {
            i--;
        }
        return s.substring(0, i);
    }

    /** Python {@code str.split}: literal separator keeps empty parts; no separator splits on runs of whitespace. */
    private static List<String> split(String s, Object sep, int maxSplit) {
        List<String> parts = new ArrayList<>();
        if (sep == null) {
            String rest = s.stripLeading();
            while (!rest.isEmpty()) {
                if (maxSplit >= 0 && parts.size() == maxSplit) {
                    parts.add(rest);
                    return parts;
                }
                int end = 0;
                while (end < rest.length() && !Character.isWhitespace(rest.charAt(end))) {
                    end++;
                }
                parts.add(rest.substring(0, end));
                rest = rest.substring(end).stripLeading();
            }
            return parts;
        }
        String separator = str(sep);
        if (separator.isEmpty()) {
            throw new IllegalArgumentException("split: empty separator");
        }
        int from = 0;
        while (maxSplit < 0 || parts.size() < maxSplit) {
            int at = s.indexOf(separator, from);
            if (at < 0) {
                break;
            }
            parts.add(s.substring(from, at));
            from = at + separator.length();
        }
        parts.add(s.substring(from));
        return parts;
    }

    private static String title(String s) {
        StringBuilder b = new StringBuilder(s.length());
        boolean start = true;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            b.append(start ? Character.toUpperCase(c) : Character.toLowerCase(c));
            start = !Character.isLetter(c);
        }
        return b.toString();
    }

    /** Python truthiness of a template value. */
    static boolean truthy(Object o) {
        if (o == null) {
            return false;
        }
        if (o instanceof Boolean b) {
            return b;
        }
        if (o instanceof Number n) {
            return n.doubleValue() != 0;
        }
        if (o instanceof CharSequence cs) {
            return !cs.isEmpty();
        }
        if (o instanceof Collection<?> c) {
            return !c.isEmpty();
        }
        if (o instanceof Map<?, ?> m) {
            return !m.isEmpty();
        }
        return true;
    }

    @Override
    public Object getValue(ELContext context, Object base, Object property) {
        return null;
    }

    @Override
    public Class<?> getType(ELContext context, Object base, Object property) {
        return null;
    }

    @Override
    public void setValue(ELContext context, Object base, Object property, Object value) {
    }

    @Override
    public boolean isReadOnly(ELContext context, Object base, Object property) {
        return false;
    }

    @Override
    public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
        return null;
    }

    @Override
    public Class<?> getCommonPropertyType(ELContext context, Object base) {
        return null;
    }
}
