import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Properties;

import kafka.server.KafkaConfig;

/**
 * Kafka's own judgement of broker configs, for kt's oracle test: each argument is a
 * properties file, read as Kafka reads server.properties, and for each one line is
 * printed, "RESULT\tOK" or "RESULT\t" and the message of what KafkaConfig threw.
 * Run with Kafka's jars on the class path: java -cp 'libs/*' KafkaConfigCheck.java FILES
 */
public class KafkaConfigCheck {
    public static void main(String[] args) throws Exception {
        for (String path : args) {
            Properties props = new Properties();
            try (Reader reader = Files.newBufferedReader(Paths.get(path), StandardCharsets.ISO_8859_1)) {
                props.load(reader);
            }
            String result;
            try {
                KafkaConfig.fromProps(props, false);
                result = "OK";
            } catch (Exception e) {
                result = e.getMessage();
            }
            System.out.println("RESULT\t" + result);
        }
    }
}
