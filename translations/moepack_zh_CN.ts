<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>ChatPage</name>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="61"/>
        <source>+ New chat</source>
        <translation>+ 新建聊天</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="65"/>
        <source>Conversations</source>
        <translation>对话</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="118"/>
        <source>Your conversations appear here.</source>
        <translation>你的对话会显示在这里。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="147"/>
        <source>New chat</source>
        <translation>新聊天</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="155"/>
        <source>%1 · %2 backend</source>
        <translation>%1 · %2 后端</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="163"/>
        <source>Rename</source>
        <translation>重命名</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="168"/>
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="174"/>
        <source>Options</source>
        <translation>选项</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="209"/>
        <source>Ask something, for example:
What does &quot;salmon&quot; mean?</source>
        <translation>问点什么，例如：
What does &quot;salmon&quot; mean?</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="240"/>
        <source>Message the model (Enter to send, Shift+Enter for a new line)</source>
        <translation>给模型发消息（Enter 发送，Shift+Enter 换行）</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="257"/>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="265"/>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="295"/>
        <source>System prompt</source>
        <translation>系统提示词</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="300"/>
        <source>Optional instructions for the model</source>
        <translation>给模型的可选指令</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="305"/>
        <source>Sampling</source>
        <translation>采样</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="308"/>
        <source>Temperature (0 = greedy)</source>
        <translation>温度（0 = 贪心）</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="309"/>
        <source>Top-p</source>
        <translation>Top-p</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="310"/>
        <source>Top-k (0 = off)</source>
        <translation>Top-k（0 = 关闭）</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="311"/>
        <source>Min-p</source>
        <translation>Min-p</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="312"/>
        <source>Repetition penalty</source>
        <translation>重复惩罚</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="313"/>
        <source>Max tokens</source>
        <translation>最大词元数</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="314"/>
        <source>Seed (-1 = random)</source>
        <translation>随机种子（-1 = 随机）</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="335"/>
        <source>Reset to defaults</source>
        <translation>恢复默认值</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="351"/>
        <source>Rename…</source>
        <translation>重命名…</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="352"/>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="357"/>
        <source>Rename conversation</source>
        <translation>重命名对话</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="372"/>
        <source>Export conversation</source>
        <translation>导出对话</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="374"/>
        <source>Markdown (*.md)</source>
        <translation>Markdown (*.md)</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="374"/>
        <source>JSON (*.json)</source>
        <translation>JSON (*.json)</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="378"/>
        <source>Export failed: %1</source>
        <translation>导出失败：%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="379"/>
        <source>Exported to %1</source>
        <translation>已导出到 %1</translation>
    </message>
</context>
<context>
    <name>ConvertWizardPage</name>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="23"/>
        <source>Folder for the Expert Pack</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="32"/>
        <source>1. Source</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="32"/>
        <source>2. Space</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="32"/>
        <source>3. Options</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="32"/>
        <source>4. Converting</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="33"/>
        <source>5. Verifying</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="33"/>
        <source>Done</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="33"/>
        <source>Failed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="38"/>
        <source>The pack needs %1; %2 free in %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="40"/>
        <source>(folder not chosen)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="45"/>
        <source>Choose the output folder…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="50"/>
        <source>Verify every expert&apos;s SHA-256 after building</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="56"/>
        <source>Convert</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="68"/>
        <source>%1 · %2/s · %3 s left</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="73"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="79"/>
        <source>Delete the source (%1 freed); the pack passed its full verify</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="85"/>
        <source>Delete source</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="89"/>
        <source>Chat now</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>DashboardPage</name>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="67"/>
        <source>Expert cache and SSD</source>
        <translation>专家缓存与 SSD</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/qml/DashboardPage.qml" line="75"/>
        <source>%1 · %2 backend · %n token(s)</source>
        <translation>
            <numerusform>%1 · %2 后端 · %n 个词元</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="77"/>
        <source>No model loaded</source>
        <translation>未加载模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="87"/>
        <source>Hit rate</source>
        <translation>命中率</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="91"/>
        <source>Tokens</source>
        <translation>词元</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="97"/>
        <source>Cache slots used</source>
        <translation>已用缓存槽</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="99"/>
        <source>%1 / %2</source>
        <translation>%1 / %2</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="100"/>
        <source>resident</source>
        <translation>常驻</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="109"/>
        <source>Cache occupancy</source>
        <translation>缓存占用</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="121"/>
        <source>%1 of %2 MiB</source>
        <translation>%1 / %2 MiB</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="123"/>
        <source>experts resident (no cache)</source>
        <translation>专家常驻内存（无缓存）</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="141"/>
        <source>Cache hit rate</source>
        <translation>缓存命中率</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="150"/>
        <source>token</source>
        <translation>词元</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="155"/>
        <source>per token</source>
        <translation>每词元</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="163"/>
        <source>cumulative</source>
        <translation>累计</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="175"/>
        <source>SSD reads per token (KiB)</source>
        <translation>每词元 SSD 读取量 (KiB)</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="188"/>
        <source>Evictions per token</source>
        <translation>每词元淘汰数</translation>
    </message>
</context>
<context>
    <name>FirstRunPanel</name>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="18"/>
        <source>Planning the Expert Pack</source>
        <translation>正在规划专家包</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="19"/>
        <source>Checking free space and direct I/O</source>
        <translation>正在检查可用空间和直接 I/O</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="20"/>
        <source>Writing the dense weights</source>
        <translation>正在写入稠密权重</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="21"/>
        <source>Writing the experts</source>
        <translation>正在写入专家</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="22"/>
        <source>Finalising the pack</source>
        <translation>正在完成专家包</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="23"/>
        <source>Verifying the pack</source>
        <translation>正在校验专家包</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="24"/>
        <source>Pack ready</source>
        <translation>专家包已就绪</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="25"/>
        <source>Opening the model</source>
        <translation>正在打开模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="26"/>
        <source>Preparing</source>
        <translation>正在准备</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="40"/>
        <source>The model could not be loaded</source>
        <translation>无法加载模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="41"/>
        <source>No model loaded</source>
        <translation>未加载模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="42"/>
        <source>Getting the model ready</source>
        <translation>正在准备模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="80"/>
        <source>Reload</source>
        <translation>重新加载</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="86"/>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
</context>
<context>
    <name>LibraryPage</name>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="27"/>
        <source>Add a model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="28"/>
        <source>GGUF models (*.gguf)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="28"/>
        <source>Expert Pack manifests (manifest.json)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="33"/>
        <source>Scan a folder for models</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="41"/>
        <source>Remove %1?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="49"/>
        <source>Also delete its files from disk</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="56"/>
        <source>%1 will be freed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="57"/>
        <source>The files stay on disk; no space is freed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="66"/>
        <source>Convert to an Expert Pack</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="82"/>
        <source>Add file…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="83"/>
        <source>Scan folder…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="86"/>
        <source>Ollama model, e.g. qwen3:30b</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="90"/>
        <source>Add Ollama model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="94"/>
        <source>Refresh</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="138"/>
        <source>No models yet. Drop GGUF files or pack folders here, or scan a folder.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="164"/>
        <source>%1 (deleted)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="168"/>
        <source>%1 · %2 · %3 · %4 experts, top-%5 · %6</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="175"/>
        <source>pack ready</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="176"/>
        <source>pack building</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="177"/>
        <source>pack failed verify</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="178"/>
        <source>no pack</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="185"/>
        <source>Convert…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="193"/>
        <source>Remove…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="206"/>
        <source>Downloads</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="214"/>
        <source>https:// URL or owner/repo</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="216"/>
        <source>file in the repository</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="217"/>
        <source>SHA-256 (optional)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="219"/>
        <source>Download</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="247"/>
        <source>%1 of %2 · %3/s · %4</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="250"/>
        <source>%1 s left</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="253"/>
        <source>Resume</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="253"/>
        <source>Pause</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="259"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
</context>
<context>
    <name>Main</name>
    <message>
        <location filename="../ui/qml/Main.qml" line="15"/>
        <source>MoePack Studio — %1</source>
        <translation>MoePack Studio — %1</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="16"/>
        <source>MoePack Studio</source>
        <translation>MoePack Studio</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="84"/>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="85"/>
        <source>Dashboard</source>
        <translation>仪表盘</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="86"/>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="87"/>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="88"/>
        <source>Library</source>
        <translation>模型库</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="142"/>
        <source>Loading</source>
        <translation>加载中</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="143"/>
        <source>Error</source>
        <translation>错误</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="143"/>
        <source>No model</source>
        <translation>无模型</translation>
    </message>
</context>
<context>
    <name>MessageBubble</name>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="49"/>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="49"/>
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="78"/>
        <source>The reply failed: %1</source>
        <translation>回复失败：%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="97"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="102"/>
        <source>Save and re-run</source>
        <translation>保存并重新生成</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="121"/>
        <source>%1 prompt tokens · %2 tokens · first token %3 ms · prefill %4 tok/s · decode %5 tok/s</source>
        <translation>提示 %1 词元 · 生成 %2 词元 · 首词元 %3 毫秒 · 预填充 %4 词元/秒 · 解码 %5 词元/秒</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="125"/>
        <source> · stopped</source>
        <translation> · 已停止</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="126"/>
        <source> · length limit</source>
        <translation> · 达到长度上限</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="145"/>
        <source>generating…</source>
        <translation>生成中…</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="154"/>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="163"/>
        <source>Edit</source>
        <translation>编辑</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="176"/>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
</context>
<context>
    <name>ModelInspector</name>
    <message numerus="yes">
        <source>%1 (%2), %n tokens</source>
        <translation type="vanished">
            <numerusform>%1（%2），%n 个词元</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ModelPage</name>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="24"/>
        <source>Cannot open the model:
%1</source>
        <translation>无法打开模型：
%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="40"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="45"/>
        <source>Architecture</source>
        <translation>架构</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="46"/>
        <source>Size on disk</source>
        <translation>磁盘占用</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="47"/>
        <source>Tensors</source>
        <translation>张量</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="48"/>
        <source>Tokenizer</source>
        <translation>分词器</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="49"/>
        <source>Routed experts</source>
        <translation>路由专家</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="51"/>
        <source>%1 per layer, top-%2, %3 shared</source>
        <translation>每层 %1 个，top-%2，%3 个共享</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="54"/>
        <source>All routed experts</source>
        <translation>全部路由专家</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="59"/>
        <source>Hyperparameters</source>
        <translation>超参数</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="85"/>
        <source>One routed expert per block (KiB)</source>
        <translation>每个块中单个路由专家的大小（KiB）</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="110"/>
        <source>expert KiB</source>
        <translation>专家 KiB</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="116"/>
        <source>Layers with routed experts</source>
        <translation>含路由专家的层</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="132"/>
        <source>blk.%1 — %2 experts × %3 KiB</source>
        <translation>blk.%1 — %2 个专家 × %3 KiB</translation>
    </message>
</context>
<context>
    <name>QObject</name>
    <message>
        <location filename="../ui/downloader.cpp" line="49"/>
        <source>empty file name</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="51"/>
        <source>&apos;%1&apos; is not a file name</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="52"/>
        <source>&apos;%1&apos; starts with a dot</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="53"/>
        <source>file name longer than 255 characters</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="56"/>
        <source>&apos;%1&apos; contains a path separator or control character</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="60"/>
        <source>&apos;%1&apos; ends in %2, which MoePack uses for its own files</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="72"/>
        <location filename="../ui/downloader.cpp" line="75"/>
        <source>&apos;%1&apos; is not owner/repository</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="80"/>
        <source>&apos;%1&apos; is not a file path inside the repository</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="84"/>
        <source>the hub address %1 is not an https:// URL</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>SettingsPage</name>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="91"/>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="97"/>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="100"/>
        <source>Backend</source>
        <translation>后端</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="110"/>
        <source>CPU threads</source>
        <translation>CPU 线程数</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="111"/>
        <source>0 = automatic (%1: all cores but one, for the UI)</source>
        <translation>0 = 自动（%1：保留一个核心给界面）</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="113"/>
        <source>Context length (tokens)</source>
        <translation>上下文长度（词元）</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="117"/>
        <source>Expert cache and SSD reads</source>
        <translation>专家缓存与 SSD 读取</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="120"/>
        <source>Cache budget (MiB)</source>
        <translation>缓存预算 (MiB)</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="121"/>
        <source>cache_vram_mib: VRAM on CUDA, host RAM on the CPU backend</source>
        <translation>cache_vram_mib：CUDA 上为显存，CPU 后端为内存</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="123"/>
        <source>Keep free (MiB)</source>
        <translation>保留空闲 (MiB)</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="124"/>
        <source>Staging buffers</source>
        <translation>暂存缓冲区</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="125"/>
        <source>Reads per expert</source>
        <translation>每个专家的读取次数</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="131"/>
        <source>Direct I/O (O_DIRECT)</source>
        <translation>直接 I/O (O_DIRECT)</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="153"/>
        <source>Load a model to see how many experts these values hold. Free memory: %1 MiB.</source>
        <translation>加载模型后可查看这些设置能容纳多少专家。可用内存：%1 MiB。</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="155"/>
        <source>%1 MiB usable of %2 MiB free → %3 expert slots of %4 MiB.</source>
        <translation>可用 %1 MiB（空闲 %2 MiB）→ %3 个专家槽，每个 %4 MiB。</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="166"/>
        <source>Defaults for new conversations</source>
        <translation>新对话的默认值</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="167"/>
        <source>Temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="167"/>
        <source>0 = greedy (reproducible)</source>
        <translation>0 = 贪心（可复现）</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="168"/>
        <source>Top-p</source>
        <translation>Top-p</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="169"/>
        <source>Top-k</source>
        <translation>Top-k</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="169"/>
        <source>0 = off</source>
        <translation>0 = 关闭</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="170"/>
        <source>Min-p</source>
        <translation>Min-p</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="171"/>
        <source>Repetition penalty</source>
        <translation>重复惩罚</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="172"/>
        <source>Max tokens per reply</source>
        <translation>每次回复的最大词元数</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="173"/>
        <source>Seed</source>
        <translation>随机种子</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="173"/>
        <source>-1 = random</source>
        <translation>-1 = 随机</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="174"/>
        <source>System prompt</source>
        <translation>系统提示词</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="178"/>
        <source>Models and language</source>
        <translation>模型与语言</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="179"/>
        <source>Expert Pack folder</source>
        <translation>专家包文件夹</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="184"/>
        <source>Convert GGUF models to Expert Packs when opened</source>
        <translation>打开 GGUF 模型时转换为专家包</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="195"/>
        <source>Language</source>
        <translation>语言</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="201"/>
        <source>System</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="226"/>
        <source>Fix the highlighted values first.</source>
        <translation>请先修正标出的值。</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="227"/>
        <source>Changes are not applied yet.</source>
        <translation>更改尚未应用。</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="230"/>
        <source>Reset to defaults</source>
        <translation>恢复默认值</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="236"/>
        <source>Revert</source>
        <translation>还原</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="243"/>
        <source>Apply</source>
        <translation>应用</translation>
    </message>
</context>
<context>
    <name>moepack::ui::ChatViewModel</name>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="43"/>
        <source>Cannot open the conversation database: %1</source>
        <translation>无法打开对话数据库：%1</translation>
    </message>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="223"/>
        <source>New chat</source>
        <translation>新聊天</translation>
    </message>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="270"/>
        <source>The model is not ready.</source>
        <translation>模型尚未就绪。</translation>
    </message>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="333"/>
        <source>There is no conversation to export.</source>
        <translation>没有可导出的对话。</translation>
    </message>
</context>
<context>
    <name>moepack::ui::ConvertWizard</name>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="108"/>
        <source>Not enough space in %1: the pack needs %2 bytes, %3 bytes are free</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="177"/>
        <source>Cancelled. Nothing was finalised; start again to resume.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="225"/>
        <source>cannot delete %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="230"/>
        <source>Source deleted.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::Downloader</name>
    <message>
        <location filename="../ui/downloader.cpp" line="103"/>
        <source>the partial file %1 could not be read back</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="182"/>
        <source>only https:// downloads are allowed: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="194"/>
        <source>refused file name from %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="198"/>
        <source>cannot create the models folder %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="203"/>
        <source>refused file name %1: it leaves the models folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="207"/>
        <source>%1 already exists; remove it first</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="211"/>
        <source>the expected SHA-256 &apos;%1&apos; is not 64 hex digits</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="294"/>
        <location filename="../ui/downloader.cpp" line="509"/>
        <source>TLS verification failed for %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="298"/>
        <location filename="../ui/downloader.cpp" line="513"/>
        <source>HTTP %1 for %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="326"/>
        <source>not enough space in %1: %2 bytes needed, %3 bytes free</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="368"/>
        <source>cannot open %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="372"/>
        <source>cannot truncate %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="406"/>
        <source>gave up on %1 after %2 restarts; last: %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="429"/>
        <source>the server answered a different range or file (Content-Range &apos;%1&apos;, ETag &apos;%2&apos;)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="456"/>
        <source>the file changed on the server between HEAD and GET</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="471"/>
        <source>the server sent more than the announced %1 bytes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="475"/>
        <source>cannot write %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="501"/>
        <source>the server refused the range from byte %1 (416)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="521"/>
        <source>the body ended at byte %1 of %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/downloader.cpp" line="540"/>
        <source>download of %1 failed after %n attempt(s): %2</source>
        <translation type="unfinished">
            <numerusform></numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="561"/>
        <source>%1 has %2 bytes, expected %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="571"/>
        <source>%1: SHA-256 mismatch (expected %2 from the %3, got %4); %5</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="572"/>
        <source>user</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="572"/>
        <source>server</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="573"/>
        <source>the file was kept aside as %1 and not installed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="574"/>
        <source>the file was not installed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="579"/>
        <source>cannot rename %1 to %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="606"/>
        <source>cannot write the download state: %1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::DownloadsViewModel</name>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="115"/>
        <source>no certificate in the CA bundle %1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::EngineWorker</name>
    <message>
        <location filename="../ui/engine_worker.cpp" line="97"/>
        <source>Out of memory while loading %1.</source>
        <translation>加载 %1 时内存不足。</translation>
    </message>
    <message>
        <location filename="../ui/engine_worker.cpp" line="111"/>
        <source>No model is loaded.</source>
        <translation>未加载模型。</translation>
    </message>
    <message>
        <location filename="../ui/engine_worker.cpp" line="143"/>
        <source>Out of memory during generation.</source>
        <translation>生成时内存不足。</translation>
    </message>
</context>
<context>
    <name>moepack::ui::LibraryViewModel</name>
    <message numerus="yes">
        <location filename="../ui/library_view_model.cpp" line="126"/>
        <source>%n model(s) added</source>
        <translation type="unfinished">
            <numerusform></numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/library_view_model.cpp" line="135"/>
        <source>%n model(s) found in %1</source>
        <translation type="unfinished">
            <numerusform></numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/library_view_model.cpp" line="142"/>
        <source>Ollama model %1 added</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_view_model.cpp" line="154"/>
        <source>Removed; %1 freed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_view_model.cpp" line="170"/>
        <source>unknown model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_view_model.cpp" line="173"/>
        <source>Ollama&apos;s blobs are shared between its models; remove it with `ollama rm %1`</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_view_model.cpp" line="179"/>
        <source>%1 is outside the models folder %2; MoePack only deletes files there</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::ModelInspector</name>
    <message numerus="yes">
        <location filename="../ui/model_inspector.cpp" line="71"/>
        <source>%1 (%2), %n tokens</source>
        <translation type="unfinished">
            <numerusform>%1（%2），%n 个词元</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>moepack::ui::SettingsViewModel</name>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="109"/>
        <source>Choose auto, cpu or cuda.</source>
        <translation>请选择 auto、cpu 或 cuda。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="115"/>
        <source>Unknown language.</source>
        <translation>未知语言。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="118"/>
        <source>Choose a folder.</source>
        <translation>请选择文件夹。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="128"/>
        <source>Enter a number.</source>
        <translation>请输入数字。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="129"/>
        <source>Between %1 and %2.</source>
        <translation>应介于 %1 和 %2 之间。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="132"/>
        <location filename="../ui/settings_view_model.cpp" line="136"/>
        <source>Unknown setting %1.</source>
        <translation>未知设置 %1。</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/settings_view_model.cpp" line="222"/>
        <source>%n slot(s) cannot hold one layer&apos;s %1 selected experts; the engine would refuse to start.</source>
        <translation>
            <numerusform>%n 个槽放不下一层选中的 %1 个专家；引擎将无法启动。</numerusform>
        </translation>
    </message>
</context>
</TS>
