package example;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemNotFoundException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import dev.langchain4j.data.document.Metadata;
import dev.langchain4j.data.segment.TextSegment;

/**
 * The paragraphs of Markdown files, each a {@link TextSegment} whose metadata names its
 * {@linkplain #FILE file}, the file's {@linkplain #TITLE title} and the {@linkplain #HEADING heading}
 * the paragraph stands under; {@link #inContext} is the text to embed. Code blocks (fenced),
 * tables, HTML lines, headings themselves and paragraphs of fewer than {@value #MIN_WORDS} words are
 * left out; each list item is a paragraph of its own; inline Markdown (links, code spans, emphasis)
 * is reduced to its text.
 */
public final class Corpus {
    /** The metadata key of a paragraph's file, relative to the corpus's directory: {@code docs/models.md}. */
    public static final String FILE = "file";
    /** The metadata key of the file's title: its first heading (the file's name before any heading). */
    public static final String TITLE = "title";
    /** The metadata key of the nearest heading above a paragraph (the file's title right under it). */
    public static final String HEADING = "heading";
    /** The fewest words a paragraph keeps; shorter ones ("Run:", "For example:") say nothing alone. */
    public static final int MIN_WORDS = 6;

    private static final Pattern HEADING_LINE = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");
    private static final Pattern LIST_ITEM = Pattern.compile("^\\s*(?:[-*+]|\\d+[.)])\\s+");
    private static final Pattern RULE = Pattern.compile("^\\s*(?:-{3,}|\\*{3,}|_{3,}|={3,})\\s*$");
    private static final Pattern IMAGE = Pattern.compile("!\\[[^]]*]\\([^)]*\\)");
    private static final Pattern LINK = Pattern.compile("\\[([^]]*)]\\([^)]*\\)");
    private static final Pattern EMPHASIS = Pattern.compile("\\*\\*|__");
    private static final Pattern SPACES = Pattern.compile("\\s+");

    private Corpus() {}

    /**
     * Reads every {@code .md} file under a directory, in the order of their paths.
     *
     * @param dir the directory
     * @return the paragraphs of all its files
     * @throws UncheckedIOException if a file cannot be read
     */
    public static List<TextSegment> read(Path dir) {
        List<Path> files;
        try (Stream<Path> walk = Files.walk(dir)) {
            files = walk.filter(p -> p.getFileName() != null && p.getFileName().toString().endsWith(".md"))
                    .sorted((a, b) -> dir.relativize(a).toString().compareTo(dir.relativize(b).toString()))
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir, e);
        }
        List<TextSegment> paragraphs = new ArrayList<>();
        for (Path f : files) {
            try {
                paragraphs.addAll(paragraphs(dir.relativize(f).toString().replace('\\', '/'),
                        Files.readString(f, StandardCharsets.UTF_8)));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + f, e);
            }
        }
        return paragraphs;
    }

    /**
     * The directory of the corpus this example ships: {@code corpus/} on the class path, where the
     * build copies the project's {@code README.md} and {@code docs/*.md}; inside the jar too.
     *
     * @return the directory
     * @throws IllegalStateException if the class path has no {@code corpus/}
     */
    public static Path shipped() {
        URL url = Corpus.class.getResource("/corpus/README.md");
        if (url == null) {
            throw new IllegalStateException("no corpus/ on the class path: build the example with mvn package");
        }
        try {
            URI uri = url.toURI();
            Path readme;
            try {
                readme = Path.of(uri);
            } catch (FileSystemNotFoundException e) {   // in a jar: open it as a file system
                readme = FileSystems.newFileSystem(uri, Map.of()).provider().getPath(uri);
            }
            return readme.getParent();
        } catch (URISyntaxException | IOException e) {
            throw new IllegalStateException("cannot open the corpus at " + url, e);
        }
    }

    /**
     * Splits one Markdown text into its paragraphs.
     *
     * @param file     the file's name, for the metadata
     * @param markdown the text
     * @return its paragraphs, in order
     */
    public static List<TextSegment> paragraphs(String file, String markdown) {
        List<TextSegment> out = new ArrayList<>();
        String title = null;
        String heading = file;
        String fence = null;                  // the fence of the code block we are in: ``` or ~~~
        StringBuilder paragraph = new StringBuilder();
        for (String line : markdown.split("\n", -1)) {
            String trimmed = line.strip();
            if (fence != null) {
                if (trimmed.startsWith(fence)) {
                    fence = null;
                }
                continue;
            }
            if (trimmed.startsWith("```") || trimmed.startsWith("~~~")) {
                flush(out, paragraph, file, title, heading);
                fence = trimmed.substring(0, 3);
                continue;
            }
            var h = HEADING_LINE.matcher(trimmed);
            if (h.matches()) {
                flush(out, paragraph, file, title, heading);
                heading = clean(h.group(1));
                if (title == null) {
                    title = heading;
                }
                continue;
            }
            if (trimmed.isEmpty() || trimmed.startsWith("|") || trimmed.startsWith("<") || RULE.matcher(trimmed).matches()) {
                flush(out, paragraph, file, title, heading);   // a blank line, a table's row, HTML, a rule
                continue;
            }
            if (LIST_ITEM.matcher(line).lookingAt()) {
                flush(out, paragraph, file, title, heading);
                trimmed = LIST_ITEM.matcher(line).replaceFirst("");
            }
            if (trimmed.startsWith(">")) {
                trimmed = trimmed.substring(1).strip();
            }
            paragraph.append(paragraph.isEmpty() ? "" : " ").append(trimmed);
        }
        flush(out, paragraph, file, title, heading);
        return out;
    }

    private static void flush(List<TextSegment> out, StringBuilder paragraph, String file, String title,
                              String heading) {
        String text = clean(paragraph.toString());
        paragraph.setLength(0);
        if (!text.isEmpty() && text.split(" ").length >= MIN_WORDS) {
            out.add(TextSegment.from(text, Metadata.from(Map.of(FILE, file, TITLE, title == null ? file : title,
                    HEADING, heading))));
        }
    }

    /**
     * A paragraph as it is embedded and reranked: after its file's title and its heading, {@code
     * "Title, Heading: text"} ({@code "Title: text"} right under the title), so that a paragraph that
     * does not name its subject ("It is closed when ...") is still found by it. With
     * all-MiniLM-L6-v2 and the built-in queries this puts the pages on the subject ahead of pages
     * that mention it in passing.
     *
     * @param paragraph a paragraph of {@link #read} or {@link #paragraphs}
     * @return the text in context, with the same metadata
     */
    public static TextSegment inContext(TextSegment paragraph) {
        String title = paragraph.metadata().getString(TITLE);
        String heading = paragraph.metadata().getString(HEADING);
        String context = title == null || title.equals(heading) ? heading : title + ", " + heading;
        return TextSegment.from(context == null ? paragraph.text() : context + ": " + paragraph.text(),
                paragraph.metadata());
    }

    /** Inline Markdown reduced to its text: images dropped, links to their text, code spans and bold unmarked. */
    static String clean(String s) {
        s = IMAGE.matcher(s).replaceAll("");
        s = LINK.matcher(s).replaceAll("$1");
        s = EMPHASIS.matcher(s.replace("`", "")).replaceAll("");
        return SPACES.matcher(s).replaceAll(" ").strip();
    }
}
