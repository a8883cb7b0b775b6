<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en_US">
<context>
    <name>Main</name>
    <message>
        <location filename="../ui/qml/Main.qml" line="11"/>
        <source>MoePack Studio — %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="12"/>
        <location filename="../ui/qml/Main.qml" line="28"/>
        <source>MoePack Studio</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>ModelInspector</name>
    <message numerus="yes">
        <location filename="../ui/model_inspector.cpp" line="71"/>
        <source>%1 (%2), %n tokens</source>
        <translation type="unfinished">
            <numerusform></numerusform>
            <numerusform></numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ModelPage</name>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="24"/>
        <source>Cannot open the model:
%1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="40"/>
        <source>Model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="45"/>
        <source>Architecture</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="46"/>
        <source>Size on disk</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="47"/>
        <source>Tensors</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="48"/>
        <source>Tokenizer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="49"/>
        <source>Routed experts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="51"/>
        <source>%1 per layer, top-%2, %3 shared</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="54"/>
        <source>All routed experts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="59"/>
        <source>Hyperparameters</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="85"/>
        <source>One routed expert per block (KiB)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="110"/>
        <source>expert KiB</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="116"/>
        <source>Layers with routed experts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="132"/>
        <source>blk.%1 — %2 experts × %3 KiB</source>
        <translation type="unfinished"></translation>
    </message>
</context>
</TS>
