/**
 * The {@code dlpack4j} command: {@code demo}, {@code doctor} and {@code bench}. An application, so it
 * exports nothing; picocli and Jackson reach its commands and report records by reflection.
 */
module io.github.dlpack4j.cli {
    requires io.github.dlpack4j.python;
    requires io.github.dlpack4j.image;
    requires io.github.dlpack4j.model;
    // Optional: doctor and bench report ONNX Runtime when it is there (--add-modules on the module path).
    requires static io.github.dlpack4j.onnxruntime;
    requires info.picocli;
    requires com.fasterxml.jackson.databind;
    requires org.jfree.jfreechart;
    requires org.jfree.svg;
    requires java.desktop;

    opens io.github.dlpack4j.cli to info.picocli, com.fasterxml.jackson.databind;
}
