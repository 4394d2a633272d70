package dev.strata.engine.synth;

import java.util.List;

/**
 * The built-in text that synthetic tokenizers are trained on and that gives tokens a topic: a
 * few paragraphs on each of several topics, with digits, punctuation, code, and some non-ASCII
 * text (accents, CJK, emoji) so that multi-byte merges are learned too. Immutable.
 */
public final class TextSample {

    /** One topic's paragraphs. */
    public record Topic(String name, String text) {
    }

    private static final List<Topic> TOPICS = List.of(
            new Topic("kitchen", """
                    Bake the bread at 220 degrees for 35 minutes, then let it cool on a rack. The dough rises \
                    twice: once in the bowl, once in the tin. Flour, water, salt and yeast are all it needs; \
                    butter and sugar make a softer loaf. Slice the onions thinly and fry them slowly in oil \
                    until they turn golden. A pinch of salt draws out the water. Stir the soup, taste it, \
                    and add pepper. Crème brûlée wants a hot grill for the sugar crust.
                    """),
            new Topic("sky", """
                    The planets move against the fixed stars: Mars looks red, Jupiter bright, Saturn pale \
                    yellow with its rings. A telescope with a 200 mm mirror shows the moons of Jupiter and \
                    the phases of Venus. The Moon takes 27.3 days to orbit the Earth; light from the Sun \
                    needs about 8 minutes to reach us. Comets grow tails when they come near the Sun, and \
                    meteors burn up high in the atmosphere. 星空 and 月亮 are the sky and the moon.
                    """),
            new Topic("sea", """
                    The boat leaves the harbour at dawn with the tide. Raise the mainsail, trim the jib, and \
                    keep the wind on the port side. The waves grow when the wind blows for hours over open \
                    water; sailors read the clouds to know what weather comes next. A knot is one nautical \
                    mile per hour. Drop the anchor in sand, not in weed, and let out five times the depth \
                    in chain. 🌊 ⛵ Fair winds!
                    """),
            new Topic("code", """
                    def mean(values):
                        total = 0
                        for v in values:
                            total += v
                        return total / len(values)

                    int[] counts = new int[256]; for (byte b : data) { counts[b & 0xFF]++; }
                    if (x != null && x.size() > 0) { return x.get(0); } // first element
                    SELECT name, count(*) FROM users WHERE age >= 18 GROUP BY name;
                    """),
            new Topic("music", """
                    The orchestra tunes to the oboe's A at 440 hertz. Strings, woodwinds, brass and \
                    percussion each have their seats; the conductor keeps the tempo and shapes the phrases. \
                    A sonata has three or four movements, and a fugue weaves one theme through many voices. \
                    The piano has 88 keys, the guitar six strings. Café music, Lieder, and the chanson \
                    française are sung in small rooms. 音楽 means music.
                    """),
            new Topic("garden", """
                    Sow the seeds in spring when the soil is warm, and water them every evening. Tomatoes \
                    need sun and a stake to climb; beans climb by themselves. Compost feeds the soil, and \
                    worms turn it. Prune the roses in late winter, just above an outward bud. The apple \
                    tree flowers in April and the fruit is picked in September. 🌱🍅 Weeds grow fastest \
                    after rain.
                    """));

    private TextSample() {
    }

    /** The topics, in a fixed order. */
    public static List<Topic> topics() {
        return TOPICS;
    }

    /** All topics' text, concatenated. */
    public static String all() {
        StringBuilder s = new StringBuilder();
        for (Topic t : TOPICS) {
            s.append(t.text()).append('\n');
        }
        return s.toString();
    }
}
