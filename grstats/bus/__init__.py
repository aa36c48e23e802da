"""The MQTT bus: the only package that imports aiomqtt (topics, Will, retain, reconnect)."""
