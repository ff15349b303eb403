// Decode an LZ4 chunk stream with lz4-java's LZ4BlockInputStream, the
// class Minecraft reads LZ4 chunks with (checksums checked), to standard
// output: java -cp /usr/share/java/lz4-java.jar Lz4Read.java FILE
import java.io.*;
import java.nio.file.*;
import net.jpountz.lz4.LZ4BlockInputStream;

public class Lz4Read {
    public static void main(String[] args) throws IOException {
        try (InputStream in = new LZ4BlockInputStream(new FileInputStream(args[0]))) {
            in.transferTo(System.out);
        }
        System.out.flush();
    }
}
