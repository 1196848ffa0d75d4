import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.util.HexFormat;

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Readable;

/**
 * Kafka's own reading of message bodies, for kt's oracle tests: each line of standard
 * input is "NAME VERSION HEX" (NAME a generated message class of
 * org.apache.kafka.common.message, such as AlterPartitionRequestData; HEX the body
 * without the request or response header), and for each one line is printed,
 * "RESULT\t" and the message as Kafka's generated JSON converter writes it, or "ERROR\t"
 * and what reading it threw.
 * Run with Kafka's jars on the class path: java -cp 'libs/*' MessageDecode.java
 */
public class MessageDecode {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.trim().split(" ");
            String name = "org.apache.kafka.common.message." + parts[0];
            short version = Short.parseShort(parts[1]);
            ByteBuffer buffer = ByteBuffer.wrap(HexFormat.of().parseHex(parts[2]));
            try {
                Class<?> type = Class.forName(name);
                ApiMessage message = (ApiMessage) type
                    .getConstructor(Readable.class, short.class)
                    .newInstance(new ByteBufferAccessor(buffer), version);
                if (buffer.hasRemaining()) {
                    throw new IllegalStateException(buffer.remaining() + " bytes left over");
                }
                Class<?> converter = Class.forName(name + "JsonConverter");
                Object json = converter.getMethod("write", type, short.class)
                    .invoke(null, message, version);
                System.out.println("RESULT\t" + json);
            } catch (Exception e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                System.out.println("ERROR\t" + cause);
            }
        }
    }
}
