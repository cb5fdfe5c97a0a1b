from __future__ import annotations

from django.urls import path

from deeprepo_web.reports import views

P = "p/<slug:slug>/reports/"
R = P + "<str:rid>/"

urlpatterns = [
    path(P, views.report_list, name="reports"),
    path(P + "new/", views.report_new, name="report_new"),
    path(P + "from-compare/", views.report_from_compare, name="report_from_compare"),
    path(R, views.report_detail, name="report"),
    path(R + "title/", views.report_title, name="report_title"),
    path(R + "blocks/", views.block_add, name="report_block_add"),
    path(R + "blocks/form/", views.block_form, name="report_block_form"),
    path(R + "blocks/<str:uid>/", views.block_save, name="report_block_save"),
    path(R + "blocks/<str:uid>/panel/", views.report_panel, name="report_panel"),
    path(R + "blocks/<str:uid>/move/", views.block_move, name="report_block_move"),
    path(R + "blocks/<str:uid>/remove/", views.block_remove, name="report_block_remove"),
    path(R + "publish/", views.report_publish, name="report_publish"),
    path(R + "published/", views.report_published, name="report_published"),
    path(R + "versions/", views.report_versions, name="report_versions"),
    path(R + "versions/<int:number>/", views.report_version, name="report_version"),
    path(R + "versions/<int:number>/restore/", views.report_restore, name="report_restore"),
    path(R + "export.md", views.report_export_md, name="report_export_md"),
    path(R + "export.pdf", views.report_export_pdf, name="report_export_pdf"),
]
