package dev.strata.bench;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.util.Arrays;

/**
 * One line of a plot in a benchmark report: points {@code (x[i], y[i])} that
 * {@link ReportWriter} draws with the other series of the same {@code plot} (a miss curve per
 * policy, a latency CDF per rig, throughput against block size per copy path).
 *
 * <p>Immutable (the arrays are copied in and out); any thread.
 *
 * @param plot  the plot this line belongs to, also its title, e.g. {@code HOST to DEVICE copy}
 * @param label the line's name in the legend, e.g. {@code lru}
 * @param xAxis the x axis's label with its unit, e.g. {@code block size (bytes)}
 * @param yAxis the y axis's label with its unit, e.g. {@code GB/s}
 * @param logX  whether the x axis is logarithmic (then every x is positive)
 * @param x     x values, ascending
 * @param y     y values, as many as x
 */
@JsonPropertyOrder({"plot", "label", "x_axis", "y_axis", "log_x", "x", "y"})
public record Series(String plot, String label, @JsonProperty("x_axis") String xAxis, @JsonProperty("y_axis") String yAxis,
                     @JsonProperty("log_x") boolean logX, double[] x, double[] y) {

    /** @throws IllegalArgumentException if the coordinates differ in number, or a log axis has a non-positive x */
    public Series {
        if (x.length != y.length) {
            throw new IllegalArgumentException("series '" + label + "' of plot '" + plot + "': " + x.length + " x values but "
                    + y.length + " y values");
        }
        if (logX && Arrays.stream(x).anyMatch(v -> !(v > 0))) {
            throw new IllegalArgumentException("series '" + label + "' of plot '" + plot + "': a logarithmic x axis needs positive"
                    + " x values, got " + Arrays.toString(x));
        }
        x = x.clone();
        y = y.clone();
    }

    /**
     * The distribution of {@code h} (nanoseconds) as a latency CDF in microseconds: the fraction of
     * samples at or below each latency, at the 1st to the 100th percentile, on a logarithmic axis.
     */
    public static Series latencyCdf(String plot, String label, org.HdrHistogram.Histogram h) {
        double[] pct = {1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9, 100};
        double[] x = new double[pct.length];
        double[] y = new double[pct.length];
        for (int i = 0; i < pct.length; i++) {
            x[i] = Math.max(1, h.getValueAtPercentile(pct[i])) / 1e3;
            y[i] = pct[i] / 100;
        }
        return new Series(plot, label, "latency (us)", "fraction at or below", true, x, y);
    }

    @Override
    public double[] x() {
        return x.clone();
    }

    @Override
    public double[] y() {
        return y.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Series s && plot.equals(s.plot) && label.equals(s.label) && xAxis.equals(s.xAxis)
                && yAxis.equals(s.yAxis) && logX == s.logX && Arrays.equals(x, s.x) && Arrays.equals(y, s.y);
    }

    @Override
    public int hashCode() {
        return plot.hashCode() * 31 + label.hashCode();
    }

    @Override
    public String toString() {
        return "Series[" + plot + " / " + label + ", " + x.length + " points]";
    }
}
