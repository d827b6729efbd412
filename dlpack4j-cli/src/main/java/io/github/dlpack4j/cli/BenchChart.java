package io.github.dlpack4j.cli;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Rectangle;
import java.io.IOException;
import java.text.FieldPosition;
import java.text.NumberFormat;
import java.text.ParsePosition;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.Locale;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;
import org.jfree.svg.SVGGraphics2D;

/**
 * The chart of {@code bench}: ns per exchange against tensor size, both axes logarithmic; for each
 * exchange the Java figure as a solid line and its Python baseline dashed in the same colour (a
 * baseline that two exchanges share is drawn once, in the first one's colour). A
 * zero-copy exchange is a flat line; the copy, drawn for scale, climbs with the size.
 */
final class BenchChart {
    private static final int WIDTH = 900;
    private static final int HEIGHT = 560;
    private static final Color[] COLORS = {new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c),
            new Color(0x9467bd), new Color(0x7f7f7f)};

    private BenchChart() {}

    /** Writes the chart of {@code timings} to {@code file}: SVG or PNG, by its extension. */
    static void write(List<Exchange.Timing> timings, Path file) throws IOException {
        JFreeChart chart = chart(timings);
        if (check(file).equals("png")) {
            ChartUtils.saveChartAsPNG(file.toFile(), chart, WIDTH, HEIGHT);
        } else {
            SVGGraphics2D g = new SVGGraphics2D(WIDTH, HEIGHT);
            chart.draw(g, new Rectangle(WIDTH, HEIGHT));
            Files.writeString(file, g.getSVGDocument());
        }
    }

    /**
     * The format of {@code file} by its extension: {@code svg} or {@code png}; checked before the
     * bench runs, so that a wrong name fails at once.
     */
    static String check(Path file) {
        String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
        if (!name.endsWith(".svg") && !name.endsWith(".png")) {
            throw new IllegalArgumentException("--chart " + file + ": the file name must end in .svg or .png");
        }
        return name.substring(name.length() - 3);
    }

    private static JFreeChart chart(List<Exchange.Timing> timings) {
        XYSeriesCollection data = new XYSeriesCollection();
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
        BasicStroke solid = new BasicStroke(2f);
        BasicStroke dashed = new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f);
        Set<String> baselines = new HashSet<>();
        for (Exchange e : Exchange.values()) {
            List<Exchange.Timing> rows = timings.stream().filter(t -> t.exchange() == e).toList();
            if (rows.isEmpty()) {
                continue;
            }
            Color color = COLORS[e.ordinal() % COLORS.length];
            XYSeries java = new XYSeries(e.javaLabel);
            rows.forEach(t -> java.add(t.bytes(), t.javaNs()));
            add(data, renderer, java, color, solid);
            if (baselines.add(e.pythonLabel)) { // two exchanges share numpy.from_dlpack(ndarray): drawn once
                XYSeries python = new XYSeries("Python alone: " + e.pythonLabel);
                rows.forEach(t -> python.add(t.bytes(), t.pythonNs()));
                add(data, renderer, python, color, dashed);
            }
        }
        LogAxis size = new LogAxis("tensor size (float32)");
        size.setBase(2);
        size.setTickUnit(new NumberTickUnit(4)); // a tick every 16x: 1 B, 16 B, ..., 16 MiB, 256 MiB
        size.setNumberFormatOverride(new Labels(true));
        LogAxis cost = new LogAxis("ns per exchange (log scale)");
        cost.setTickUnit(new NumberTickUnit(1)); // 100, 1,000, 10,000 ns ...
        cost.setMinorTickCount(9);
        cost.setMinorTickMarksVisible(true);
        cost.setNumberFormatOverride(new Labels(false));
        XYPlot plot = new XYPlot(data, size, cost, renderer);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        JFreeChart chart = new JFreeChart("dlpack4j bench: the cost of one exchange against tensor size",
                new Font(Font.SANS_SERIF, Font.BOLD, 16), plot, true);
        chart.setBackgroundPaint(Color.WHITE);
        return chart;
    }

    private static void add(XYSeriesCollection data, XYLineAndShapeRenderer renderer, XYSeries s, Color color, BasicStroke stroke) {
        data.addSeries(s);
        renderer.setSeriesPaint(data.getSeriesCount() - 1, color);
        renderer.setSeriesStroke(data.getSeriesCount() - 1, stroke);
    }

    /** Axis labels: sizes as {@code 4 B}, {@code 64 KiB}, {@code 256 MiB}; costs as plain numbers. */
    private static final class Labels extends NumberFormat {
        private final boolean bytes;

        Labels(boolean bytes) {
            this.bytes = bytes;
        }

        @Override
        public StringBuffer format(double number, StringBuffer to, FieldPosition pos) {
            return format(Math.round(number), to, pos);
        }

        @Override
        public StringBuffer format(long number, StringBuffer to, FieldPosition pos) {
            return to.append(bytes ? BenchCommand.bytes(number) : String.format(Locale.ROOT, "%,d", number));
        }

        @Override
        public Number parse(String source, ParsePosition pos) {
            throw new UnsupportedOperationException("labels are only written");
        }
    }
}
