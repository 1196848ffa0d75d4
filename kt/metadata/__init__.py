"""Cluster metadata: the store interface (store), its embedded backend (embedded, over
data_tree and journal), and Kafka's znode layout with byte-exact JSON codecs (znodes,
jvm_order). A ZooKeeper backend through kazoo implements the same store interface."""
