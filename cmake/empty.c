/* Keeps ulnet_tools non-empty before any tool code exists. */
void ulnet_tools_placeholder(void);
void ulnet_tools_placeholder(void) {}
