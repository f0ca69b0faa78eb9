"""perfmodel's Streamlit app: a router only (pages live in ``pages/``).

Run with ``streamlit run app.py``; the data directory is ``$PERFMODEL_HOME``.
"""

import streamlit as st

from perfmodel import ui

st.set_page_config(page_title=ui.PAGE_TITLE, page_icon=":material/speed:", layout="wide")
page = st.navigation(ui.pages())
ui.routed()
ui.startup()
ui.sidebar()
page.run()
